"""HTTP/2 clients for the end-to-end tests: a well-behaved one on the h2
state machine (requests, bodies sent under flow control, responses with
their trailers and resets, the GOAWAY it got), a raw frame reader for the
attack probes (which write frames h2 would refuse to make), and the
deployments they talk to (the test apps of the frontend-asgi and
frontend-wsgi tests, a native route and static files)."""
import os
import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import Frame, GoAwayFrame, SettingsFrame

import m0test

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# RFC 9113, section 7.
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
REFUSED_STREAM, CANCEL, COMPRESSION_ERROR, ENHANCE_YOUR_CALM = 0x7, 0x8, 0x9, 0xB

TESTS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ASGI_APPS = os.path.join(TESTS, "plugins", "frontend-asgi", "apps")
WSGI_APPS = os.path.join(TESTS, "plugins", "frontend-wsgi", "apps")
PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")


def python_plugins_built():
    return all(os.path.exists(os.path.join(PLUGINS, name))
               for name in ("m0-frontend-asgi.so", "m0-frontend-wsgi.so", "m0-executor-pool.so"))


def native_config(root, extra=""):
    """A native route at / and /hello, static files under /files from `root`."""
    return (
        "frontend:\n"
        "  type: http\n"
        "  routes:\n"
        "    - {path: /, body: 'Hello, World!', headers: {Content-Type: text/plain}}\n"
        "    - {path: /hello, body: 'Hello, World!', headers: {Content-Type: text/plain}}\n"
        "  static:\n"
        "    prefix: /files\n"
        f"    root: {root}\n"
        + extra
    )


def asgi_config(app, extra=""):
    """An app of the frontend-asgi tests ("module:attr") on an asyncio loop."""
    return ("frontend:\n  type: asgi\n" f"  app: \"{app}\"\n" f"  chdir: {ASGI_APPS}\n"
            "executor:\n  type: asyncio\n" + extra)


def wsgi_config(app, threads=2, extra=""):
    """An app of the frontend-wsgi tests ("module:callable") on a pool."""
    return ("frontend:\n  type: wsgi\n" f"  app: \"{app}\"\n" f"  chdir: {WSGI_APPS}\n"
            "executor:\n  type: pool\n" f"  pool: {{threads: {threads}, max_threads: {threads}}}\n" + extra)


def h2_context(certs, protocols=("h2",)):
    """A client context trusting `certs` (support.tls.ServerCertificate)
    that offers `protocols` by ALPN."""
    context = certs.client_context()
    context.set_alpn_protocols(list(protocols))
    return context


def connect(port, context=None, timeout=10.0, rcvbuf=None, server_hostname="localhost"):
    """A connection to m0 on `port`: TLS with `context` when given. `rcvbuf`
    shrinks the client's receive buffer (a client that does not read fills
    it sooner)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(m0test.scaled(timeout))
    sock.connect(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if context is not None:
        sock = context.wrap_socket(sock, server_hostname=server_hostname)
    return sock


class FrameReader:
    """Frames as m0 sends them, parsed with hyperframe (no state machine)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.pos = 0  # where the next frame starts in buf
        self.closed = False

    def _fill(self):
        try:
            data = self.sock.recv(1 << 20)
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            data = b""
        if not data:
            self.closed = True
        self.buf = self.buf[self.pos:] + data
        self.pos = 0

    def next(self, timeout=10.0):
        """The next frame, or None once m0 closed the connection. Raises
        socket.timeout if nothing comes within `timeout`."""
        self.sock.settimeout(m0test.scaled(timeout))
        while True:
            if len(self.buf) - self.pos >= 9:
                view = memoryview(self.buf)
                frame, length = Frame.parse_frame_header(view[self.pos:self.pos + 9])
                end = self.pos + 9 + length
                if len(self.buf) >= end:
                    frame.parse_body(view[self.pos + 9:end])
                    self.pos = end
                    return frame
            if self.closed:
                return None
            self._fill()

    def goaway_then_close(self, timeout=20.0):
        """Reads until m0 closes the connection: (the GOAWAY frames it sent,
        the number of frames before the close). Fails if the connection is
        still open after `timeout`."""
        deadline = time.monotonic() + m0test.scaled(timeout)
        goaways, frames = [], 0
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"m0 kept the connection open for {timeout}s (GOAWAY frames: {goaways})"
            try:
                frame = self.next(timeout=left / m0test.TIMEOUT_SCALE)
            except (socket.timeout, TimeoutError):
                raise AssertionError(f"m0 kept the connection open for {timeout}s (GOAWAY frames: {goaways})")
            if frame is None:
                return goaways, frames
            frames += 1
            if isinstance(frame, GoAwayFrame):
                goaways.append(frame)


def settings_frame(**values):
    """A SETTINGS frame: settings_frame(INITIAL_WINDOW_SIZE=0)."""
    frame = SettingsFrame(0)
    for name, value in values.items():
        frame.settings[getattr(SettingsFrame, name)] = value
    return frame


class Response:
    def __init__(self):
        self.headers, self.body, self.trailers = [], bytearray(), []
        self.ended, self.reset = False, None

    @property
    def status(self):
        return int(dict(self.headers)[":status"]) if self.headers else None

    def header(self, name):
        return dict(self.headers).get(name)


class _Connection(h2.connection.H2Connection):
    """h2 takes any frame after a GOAWAY for an error, but the streams up to
    its last stream id go on (RFC 9113, 6.8): this one reads them."""

    def _receive_goaway_frame(self, frame):
        result = super()._receive_goaway_frame(frame)
        self.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
        return result


class Client:
    """A client on the h2 state machine, over a plain connection (prior
    knowledge) or TLS (`context` offering h2). `settings` are sent with the
    preface; `auto_window` False keeps the windows as they are (a client
    that takes its time)."""

    def __init__(self, port, context=None, settings=None, auto_window=True, timeout=10.0):
        self.sock = connect(port, context, timeout)
        if context is not None:
            assert self.sock.selected_alpn_protocol() == "h2", self.sock.selected_alpn_protocol()
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = _Connection(config=config)
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.auto_window = auto_window
        self.timeout = timeout
        self.responses = {}
        self.goaway = None
        self.closed = False
        self.remote_settings = None
        self.pinged = 0  # PINGs from m0 (h2 answers each)
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path, method="GET", headers=(), body=None, end_stream=True, authority="localhost",
                scheme=None):
        """Opens a stream: the request head, then `body` (sent under flow
        control) when given. Returns the stream id."""
        stream_id = self.conn.get_next_available_stream_id()
        scheme = scheme or ("https" if isinstance(self.sock, ssl.SSLSocket) else "http")
        head = [(":method", method), (":scheme", scheme), (":authority", authority), (":path", path), *headers]
        self.responses[stream_id] = Response()
        self.conn.send_headers(stream_id, head, end_stream=end_stream and body is None)
        self.flush()
        if body is not None:
            self.send_body(stream_id, body, end_stream)
        return stream_id

    def send_body(self, stream_id, body, end_stream=True):
        """Sends `body` as DATA frames as far as m0's windows let it, waiting
        for its WINDOW_UPDATE frames in between."""
        view = memoryview(body)
        while view:
            window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if window <= 0:
                self.receive()
                if not self._open(stream_id):
                    return
                continue
            piece, view = view[:window], view[window:]
            self.conn.send_data(stream_id, piece.tobytes(), end_stream=end_stream and not view)
            self.flush()
        if end_stream and not body:
            self.conn.end_stream(stream_id)
            self.flush()

    def _open(self, stream_id):
        """Whether m0 still takes the body of `stream_id` (it may answer
        and end the stream early, or reset it)."""
        if self.closed:
            raise AssertionError(f"m0 closed the connection (GOAWAY {self.goaway}) while a body was sent")
        response = self.responses[stream_id]
        return response.reset is None and not response.ended

    def reset(self, stream_id, code=CANCEL):
        self.conn.reset_stream(stream_id, code)
        self.flush()

    def ping(self, payload=b"12345678"):
        self.conn.ping(payload)
        self.flush()

    def receive(self, timeout=None):
        """Reads once from the socket and handles what came; returns the
        events. Raises socket.timeout if nothing comes."""
        self.sock.settimeout(m0test.scaled(timeout or self.timeout))
        try:
            data = self.sock.recv(1 << 20)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            self.closed = True
            return []
        events = self.conn.receive_data(data)
        for event in events:
            self._handle(event)
        self.flush()
        return events

    def _handle(self, event):
        stream_id = getattr(event, "stream_id", None)
        response = self.responses.get(stream_id)
        if isinstance(event, (h2.events.ResponseReceived, h2.events.InformationalResponseReceived)):
            response.headers = [(k, v) for k, v in event.headers]
        elif isinstance(event, h2.events.DataReceived):
            response.body += event.data
            if self.auto_window and event.flow_controlled_length:
                self.conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
        elif isinstance(event, h2.events.TrailersReceived):
            response.trailers = [(k, v) for k, v in event.headers]
        elif isinstance(event, h2.events.StreamEnded):
            response.ended = True
        elif isinstance(event, h2.events.StreamReset):
            if response is not None:
                response.reset = event.error_code
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = event
        elif isinstance(event, h2.events.PingReceived):
            self.pinged += 1
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            self.remote_settings = {k: v.new_value for k, v in event.changed_settings.items()}

    def wait(self, condition, timeout=None, what="a condition"):
        """Receives until `condition()` holds; returns its value."""
        deadline = time.monotonic() + m0test.scaled(timeout or self.timeout)
        while True:
            value = condition()
            if value:
                return value
            if self.closed:
                raise AssertionError(f"m0 closed the connection while waiting for {what} (GOAWAY {self.goaway})")
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}")
            try:
                self.receive(timeout=left / m0test.TIMEOUT_SCALE)
            except (socket.timeout, TimeoutError):
                raise AssertionError(f"timed out waiting for {what}")

    def response(self, stream_id, timeout=None):
        """The whole response of `stream_id` (ended or reset)."""
        response = self.responses[stream_id]
        self.wait(lambda: response.ended or response.reset is not None, timeout,
                  what=f"the response of stream {stream_id}")
        return response

    def get(self, path, **kwargs):
        return self.response(self.request(path, **kwargs))

    def wait_closed(self, timeout=None):
        """Receives until m0 closes the connection."""
        deadline = time.monotonic() + m0test.scaled(timeout or self.timeout)
        while not self.closed:
            left = deadline - time.monotonic()
            assert left > 0, "m0 kept the connection open"
            try:
                self.receive(timeout=left / m0test.TIMEOUT_SCALE)
            except (socket.timeout, TimeoutError):
                raise AssertionError("m0 kept the connection open")
            except h2.exceptions.ProtocolError:
                self.closed = True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
