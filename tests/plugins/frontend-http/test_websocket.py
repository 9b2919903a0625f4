"""End-to-end tests of the native WebSocket echo route (`websocket: echo`,
libs/websocket over the engine's byte stream): the `websockets` client for
what a user's client does, raw frames for what a well-behaved client never
sends."""
import os
import signal
import struct

import pytest
from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK, InvalidStatus

import m0test
from m0test import request, run_m0
from support import websocket_client
from support.websocket_frames import client_frame, raw_upgrade, read_close, read_frame


def echo_config(options="{handler: echo}", drain_timeout="20s"):
    return (f"server:\n  drain_timeout: {drain_timeout}\nfrontend:\n  type: http\n  routes:\n"
            f"    - {{path: /health, body: ok}}\n    - path: /ws\n      websocket: {options}\n")


def url(server):
    return f"ws://127.0.0.1:{server.port}/ws"


def ws_connect(server, **kwargs):
    return websocket_client.ws_connect(server, "/ws", **kwargs)


def assert_closed(sock):
    assert m0test.recv_until_closed(sock, timeout=30) == b""


# --- echo ---------------------------------------------------------------------

@pytest.mark.parametrize("compression", [None, "deflate"])
def test_text_and_binary_messages_are_echoed(m0_server, compression):
    server = m0_server(echo_config())
    with ws_connect(server, compression=compression) as ws:
        extensions = ws.response.headers.get("Sec-WebSocket-Extensions")
        if compression:
            assert extensions == "permessage-deflate; server_no_context_takeover"
        else:
            assert extensions is None
        for text in ["hello", "", "é€😀" * 1000, "x" * 70000]:
            ws.send(text)
            assert ws.recv(timeout=m0test.scaled(10)) == text
        data = os.urandom(100000)
        ws.send(data)
        assert ws.recv(timeout=m0test.scaled(10)) == data
        # A fragmented message comes back whole.
        ws.send(["frag", "men", "ted"])
        assert ws.recv(timeout=m0test.scaled(10)) == "fragmented"
    assert request(server.port, "GET", "/health").body == b"ok"


def test_subprotocol_is_the_servers_first_choice(m0_server):
    server = m0_server(echo_config("{handler: echo, subprotocols: [chat, superchat]}"))
    with ws_connect(server, subprotocols=["superchat", "chat"]) as ws:
        assert ws.subprotocol == "chat"
    with ws_connect(server, subprotocols=["mqtt"]) as ws:
        assert ws.subprotocol is None


def test_plain_get_and_bad_handshakes_are_refused(m0_server):
    server = m0_server(echo_config())
    r = request(server.port, "GET", "/ws")
    assert r.status == 426
    assert r.header("Sec-WebSocket-Version") == "13"
    assert r.header("Upgrade") == "websocket"
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    r = request(server.port, "GET", "/ws", headers=dict(upgrade, **{"Sec-WebSocket-Version": "8"}))
    assert r.status == 426
    assert r.header("Sec-WebSocket-Version") == "13"
    r = request(server.port, "GET", "/ws", headers=dict(upgrade, **{"Sec-WebSocket-Version": "13",
                                                                     "Sec-WebSocket-Key": "short"}))
    assert r.status == 400
    assert b"Sec-WebSocket-Key" in r.body
    # The server keeps serving.
    with ws_connect(server) as ws:
        ws.send("still here")
        assert ws.recv(timeout=m0test.scaled(10)) == "still here"


# --- limits and bad frames ------------------------------------------------------

def test_message_over_max_message_size_closes_1009(m0_server):
    server = m0_server(echo_config("{handler: echo, max_message_size: 1k}"))
    with ws_connect(server, compression=None) as ws:
        ws.send("x" * 1024)
        assert ws.recv(timeout=m0test.scaled(10)) == "x" * 1024
        ws.send("x" * 1025)
        with pytest.raises(ConnectionClosedError) as closed:
            ws.recv(timeout=m0test.scaled(10))
    assert closed.value.rcvd.code == 1009


@pytest.mark.parametrize("frame,code", [
    (client_frame(0x1, b"bad \xed\xa0\x80 text"), 1007),                 # a UTF-16 surrogate
    (client_frame(0x1, b"x", masked=False), 1002),                       # clients must mask
    (client_frame(0x3, b"x"), 1002),                                    # reserved opcode
    (client_frame(0x9, b"p" * 126), 1002),                               # control frame over 125 bytes
    (client_frame(0x0, b"x"), 1002),                                    # continuation of nothing
])
def test_bad_frames_close_with_their_code(m0_server, frame, code):
    server = m0_server(echo_config())
    with raw_upgrade(server) as s:
        s.sendall(frame)
        assert read_close(s)[0] == code
        assert_closed(s)


def test_close_handshake_echoes_the_code(m0_server):
    server = m0_server(echo_config())
    with raw_upgrade(server) as s:
        s.sendall(client_frame(0x9, b"are you there") + client_frame(0x8, struct.pack("!H", 4000) + b"done"))
        assert read_frame(s) == (0xA, b"are you there")
        assert read_close(s)[0] == 4000
        assert_closed(s)


# --- keepalive and timeouts ---------------------------------------------------

def test_unanswered_ping_closes_1011(m0_server):
    server = m0_server(echo_config("{handler: echo, ping_interval: 200ms, ping_timeout: 300ms}"))
    with raw_upgrade(server) as s:
        assert read_frame(s) == (0x9, b"")  # no traffic: the server pings
        s.sendall(client_frame(0xA, b""))
        assert read_frame(s) == (0x9, b"")  # answered, so it pings again later
        assert read_close(s) == (1011, "keepalive ping timeout")  # this one goes unanswered
        assert_closed(s)


def test_a_client_that_answers_pings_stays_open(m0_server):
    server = m0_server(echo_config("{handler: echo, ping_interval: 100ms, ping_timeout: 300ms}"))
    with ws_connect(server) as ws:
        # A silent raw client opened after `ws` is dropped once a ping went
        # unanswered: by then `ws` has been pinged too, and it answered.
        with raw_upgrade(server) as probe:
            assert read_frame(probe) == (0x9, b"")
            assert read_close(probe)[0] == 1011
        ws.send("after pings")
        assert ws.recv(timeout=m0test.scaled(10)) == "after pings"


def test_idle_timeout_closes_1001(m0_server):
    server = m0_server(echo_config("{handler: echo, ping_interval: 0s, idle_timeout: 300ms}"))
    with ws_connect(server) as ws:
        ws.send("one")
        assert ws.recv(timeout=m0test.scaled(10)) == "one"
        with pytest.raises(ConnectionClosedOK) as closed:
            ws.recv(timeout=m0test.scaled(30))
    assert closed.value.rcvd.code == 1001
    assert closed.value.rcvd.reason == "idle timeout"


# --- drain ----------------------------------------------------------------------

def test_sigterm_closes_1001_and_m0_exits_cleanly(m0_server):
    server = m0_server(echo_config())
    with ws_connect(server) as ws:
        ws.send("before")
        assert ws.recv(timeout=m0test.scaled(10)) == "before"
        server.send_signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosedOK) as closed:
            ws.recv(timeout=m0test.scaled(30))
    assert closed.value.rcvd.code == 1001
    assert server.stop(timeout=30) == 0
    assert "force-closed 0" in server.output(), server.output()


def test_drain_deadline_drops_a_client_that_never_closes(m0_server):
    server = m0_server(echo_config("{handler: echo, close_timeout: 1h}", drain_timeout="1s"))
    with raw_upgrade(server) as s:
        server.send_signal(signal.SIGTERM)
        assert read_close(s)[0] == 1001
        assert_closed(s)  # never answered: the drain deadline closes it
    assert server.stop(timeout=30) == 0
    assert "force-closed 1" in server.output(), server.output()


# --- configuration ----------------------------------------------------------------

def test_bad_websocket_keys_are_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(echo_config("{handler: echo, ping_intervall: 1s}"))
    r = run_m0("--check", "--config", str(path))
    assert r.returncode == 2
    assert "ping_intervall" in r.stdout + r.stderr and "ping_interval" in r.stdout + r.stderr
    path.write_text(echo_config("chat"))
    r = run_m0("--check", "--config", str(path))
    assert r.returncode == 2
    assert "bad.yaml:" in r.stdout + r.stderr
