"""WebSocket over HTTP/2 (RFC 8441): with `http2.websocket: true`, m0
announces SETTINGS_ENABLE_CONNECT_PROTOCOL and an extended CONNECT reaches
every frontend's WebSocket path as the handshake it knows; the stream's
DATA frames then carry the WebSocket's frames both ways. Off by default."""
import json
import os
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import pytest

import m0test
from h2_support import ASGI_APPS, PLUGINS, python_plugins_built
from support.websocket_frames import client_frame, read_frame

ENABLE_CONNECT_PROTOCOL = 0x8
FLASK_EXAMPLE = os.path.join(m0test.SOURCE_DIR, "examples", "flask")

NATIVE_ECHO = """
frontend:
  type: http
  routes:
    - {path: /ws, websocket: {handler: echo}}
"""


class H2WebSocket:
    """One extended CONNECT over a fresh h2c connection; recv(n) reads the
    stream's DATA, so websocket_frames.read_frame works on it."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(10))
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False,
            validate_inbound_headers=False))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.settings = None
        self.status, self.headers, self.data, self.ended, self.reset = None, {}, b"", False, None
        self._pump(lambda: self.settings is not None)
        self.stream = 1
        if self.settings.get(ENABLE_CONNECT_PROTOCOL) != 1:
            return
        self.conn.send_headers(self.stream, [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
                                             (":path", path), (":authority", "127.0.0.1"),
                                             ("sec-websocket-version", "13")])
        self.sock.sendall(self.conn.data_to_send())
        self._pump(lambda: self.status is not None or self.reset is not None)

    def _pump(self, done):
        deadline = time.monotonic() + m0test.scaled(10)
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from m0 in time")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("m0 closed the connection")
            for event in self.conn.receive_data(chunk):
                if isinstance(event, h2.events.RemoteSettingsChanged):
                    self.settings = {k: v.new_value for k, v in event.changed_settings.items()}
                elif isinstance(event, h2.events.ResponseReceived):
                    self.headers = dict(event.headers)
                    self.status = int(self.headers[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    self.data += event.data
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    self.ended = True
                elif isinstance(event, h2.events.StreamReset):
                    self.reset = event.error_code
            self.sock.sendall(self.conn.data_to_send())

    def send(self, opcode, payload, end=False):
        """One frame, sent as the stream's window allows."""
        frame = client_frame(opcode, payload)
        while True:
            self._pump(lambda: self.conn.local_flow_control_window(self.stream) > 0 or self.reset is not None)
            n = min(len(frame), self.conn.local_flow_control_window(self.stream), self.conn.max_outbound_frame_size)
            last = n == len(frame)
            self.conn.send_data(self.stream, frame[:n], end_stream=end and last)
            self.sock.sendall(self.conn.data_to_send())
            frame = frame[n:]
            if last:
                return

    def recv(self, n):
        self._pump(lambda: len(self.data) >= n or self.ended)
        if len(self.data) < n:
            raise EOFError("the stream ended inside a frame")
        out, self.data = self.data[:n], self.data[n:]
        return out

    def wait_ended(self):
        self._pump(lambda: self.ended or self.reset is not None)

    def close(self):
        self.sock.close()


# The embedded interpreter runs in the test venv (Flask is there).
VENV = {"VIRTUAL_ENV": sys.prefix}


@pytest.fixture
def ws_server(m0_server):
    def start(config):
        return m0_server(config + "http2:\n  websocket: true\n", env=VENV)
    return start


def test_native_echo_and_close_over_one_stream(ws_server):
    server = ws_server(NATIVE_ECHO)
    ws = H2WebSocket(server.port, "/ws")
    try:
        assert ws.status == 200, ws.headers  # RFC 8441: 200, not 101
        assert b"sec-websocket-accept" not in ws.headers and b"upgrade" not in ws.headers
        ws.send(0x1, b"hello over h2")
        assert read_frame(ws) == (0x1, b"hello over h2")
        big = os.urandom(300 * 1024)  # several stream windows each way
        ws.send(0x2, big)
        assert read_frame(ws) == (0x2, big)
        # The close handshake, then both sides end the stream.
        ws.send(0x8, (1000).to_bytes(2, "big") + b"bye", end=True)
        opcode, payload = read_frame(ws)
        assert opcode == 0x8 and payload[:2] == (1000).to_bytes(2, "big")
        ws.wait_ended()
        assert ws.reset is None
    finally:
        ws.close()


@pytest.mark.skipif(not python_plugins_built(), reason="the Python plugins are not built")
def test_asgi_websocket_scope_over_h2(ws_server):
    server = ws_server(f"frontend:\n  type: asgi\n  app: \"ws_apps:echo\"\n  chdir: {ASGI_APPS}\n"
                       "executor:\n  type: asyncio\n")
    ws = H2WebSocket(server.port, "/chat?room=1")
    try:
        assert ws.status == 200
        opcode, payload = read_frame(ws)
        scope = json.loads(payload)
        assert (scope["type"], scope["http_version"], scope["scheme"], scope["path"]) == ("websocket", "2", "ws",
                                                                                         "/chat")
        ws.send(0x1, b"ping")
        assert read_frame(ws) == (0x1, b"ping")
        ws.send(0x8, (1000).to_bytes(2, "big"), end=True)
        assert read_frame(ws)[0] == 0x8
        server.wait_for_log(r"echo: disconnect code=1000")
    finally:
        ws.close()


@pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-module-realtime.so")),
                    reason="the realtime module is not built")
def test_realtime_websocket_hold_over_h2(ws_server):
    server = ws_server(f"frontend:\n  type: wsgi\n  app: \"chat_app:create_app()\"\n  chdir: {FLASK_EXAMPLE}\n"
                       "executor:\n  type: pool\n"
                       "realtime:\n  websocket: {max_message_size: 4k}\n")
    ws = H2WebSocket(server.port, "/ws?room=h2")
    try:
        assert ws.status == 200
        # The hold is registered before the view returns (its 200 is the
        # hold's): a publish now reaches it.
        resp = m0test.request(server.port, "POST", "/say", headers={"Content-Type": "application/x-www-form-urlencoded"},
                              body=b"room=h2&text=over-h2")
        assert resp.status == 204, resp.body
        opcode, payload = read_frame(ws)
        assert opcode == 0x1 and json.loads(payload) == {"room": "h2", "text": "over-h2"}
    finally:
        ws.close()


def test_off_by_default(m0_server):
    server = m0_server(NATIVE_ECHO)
    ws = H2WebSocket(server.port, "/ws")
    try:
        # Not announced, so a browser opens its WebSocket over HTTP/1.1.
        assert ws.settings.get(ENABLE_CONNECT_PROTOCOL, 0) == 0
    finally:
        ws.close()
    # And HTTP/1.1's handshake still works on the same port.
    s = socket.create_connection(("127.0.0.1", server.port), timeout=m0test.scaled(10))
    try:
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 101")
    finally:
        s.close()
