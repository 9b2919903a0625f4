"""The websocket scope (ASGI WebSocket spec 2.5) end to end: real ASGI apps
(apps/ws_apps.py) on the asyncio lane, the `websockets` client for what a
user's client does and raw frames for a client that vanishes."""
import base64
import json
import os
import re
import signal
import socket
import threading

import pytest
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, ConnectionClosedOK, InvalidStatus

import m0test
from conftest import APPS, asgi_config, needs_asgi
from support.websocket_client import recv, ws_connect
from support.websocket_frames import client_frame, raw_upgrade, read_close, read_frame

pytestmark = needs_asgi


def unb64(value):
    return base64.b64decode(value["b64"])


def reset(sock):
    """Closes `sock` with a TCP reset and no close frame: the client vanished."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


# --- the scope ------------------------------------------------------------------

def test_scope_has_every_key_of_the_websocket_spec(m0_server):
    server = m0_server(asgi_config("ws_apps:echo"))
    with ws_connect(server, "/caf%C3%A9/ws?room=1&x=%20", subprotocols=["chat", "superchat"],
                    additional_headers=[("X-Trace", "one"), ("X-Trace", "two")], compression=None) as ws:
        scope = json.loads(recv(ws))
        client = ws.socket.getsockname()
    assert scope["type"] == "websocket"
    assert scope["asgi"] == {"version": "3.0", "spec_version": "2.5"}
    assert scope["http_version"] == "1.1"
    assert scope["scheme"] == "ws"
    assert scope["path"] == "/café/ws"
    assert unb64(scope["raw_path"]) == b"/caf%C3%A9/ws"
    assert unb64(scope["query_string"]) == b"room=1&x=%20"
    assert scope["root_path"] == ""
    headers = [(unb64(k), unb64(v)) for k, v in scope["headers"]]
    names = [k for k, _ in headers]
    assert all(k == k.lower() for k in names), names
    assert (b"upgrade", b"websocket") in headers
    assert b"sec-websocket-key" in names
    # Arrival order, duplicates kept.
    assert [v for k, v in headers if k == b"x-trace"] == [b"one", b"two"]
    assert scope["subprotocols"] == ["chat", "superchat"]
    assert scope["client"] == [client[0], client[1]]
    assert scope["server"] == ["127.0.0.1", server.port]
    assert scope["state"] == {"from_lifespan": "yes"}
    assert scope["extensions"] == {"websocket.http.response": {}}
    assert set(scope) == {"type", "asgi", "http_version", "scheme", "path", "raw_path", "query_string",
                          "root_path", "headers", "client", "server", "subprotocols", "state", "extensions"}


def test_root_path_is_the_mount_prefix(m0_server):
    config = ("executors:\n  loop: {type: asyncio}\nmounts:\n  - prefix: /live\n    frontend:\n"
              f"      type: asgi\n      app: \"ws_apps:echo\"\n      chdir: {APPS}\n    executor: loop\n")
    server = m0_server(config)
    with ws_connect(server, "/live/ws") as ws:
        scope = json.loads(recv(ws))
    assert scope["root_path"] == "/live"
    assert scope["path"] == "/live/ws"


def test_no_subprotocol_offered_is_an_empty_list(m0_server):
    server = m0_server(asgi_config("ws_apps:echo"))
    with ws_connect(server) as ws:
        assert json.loads(recv(ws))["subprotocols"] == []
        assert ws.subprotocol is None
        assert "Sec-WebSocket-Protocol" not in ws.response.headers


# --- accept and messages ------------------------------------------------------

def test_accept_carries_the_apps_subprotocol_and_headers(m0_server):
    server = m0_server(asgi_config("ws_apps:echo"))
    with ws_connect(server, subprotocols=["superchat", "chat"]) as ws:
        assert ws.subprotocol == "superchat"
        assert ws.response.status_code == 101
        assert ws.response.headers["x-app"] == "accepted"
        assert ws.response.headers["Sec-WebSocket-Protocol"] == "superchat"


@pytest.mark.parametrize("compression", [None, "deflate"])
def test_text_and_bytes_are_echoed_large_and_fragmented(m0_server, compression):
    server = m0_server(asgi_config("ws_apps:echo"))
    with ws_connect(server, compression=compression, max_size=None) as ws:
        extensions = ws.response.headers.get("Sec-WebSocket-Extensions")
        assert (extensions is not None) == (compression is not None)
        recv(ws)  # the scope
        for text in ["hello", "", "é€😀" * 1000, "x" * 500_000]:
            ws.send(text)
            assert recv(ws) == text
        for data in [b"", b"\x00\xff", os.urandom(700_000)]:
            ws.send(data)
            assert recv(ws) == data
        # A message sent in fragments reaches the app whole.
        ws.send(["frag", "men", "ted"])
        assert recv(ws) == "fragmented"
        ws.send([b"\x01" * 70_000, b"\x02" * 70_000])
        assert recv(ws) == b"\x01" * 70_000 + b"\x02" * 70_000
        # Many messages keep their order.
        for i in range(200):
            ws.send(f"m{i}")
        assert [recv(ws) for _ in range(200)] == [f"m{i}" for i in range(200)]


def test_a_message_over_max_message_size_closes_1009(m0_server):
    server = m0_server(asgi_config("ws_apps:echo", frontend_extra="  websocket: {max_message_size: 1k}\n"))
    with ws_connect(server, compression=None) as ws:
        recv(ws)
        ws.send("y" * 1024)
        assert recv(ws) == "y" * 1024
        ws.send("y" * 1025)
        with pytest.raises(ConnectionClosedError) as closed:
            recv(ws)
    assert closed.value.rcvd.code == 1009
    server.wait_for_log("echo: disconnect code=1009")


# --- close, both ways --------------------------------------------------------------

def test_the_app_closes_with_its_code_and_reason(m0_server):
    server = m0_server(asgi_config("ws_apps:echo"))
    with ws_connect(server) as ws:
        recv(ws)
        ws.send("close 4001 going home")
        with pytest.raises(ConnectionClosed) as closed:
            recv(ws)
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4001, "going home")
    # The app hears the end of the close handshake as websocket.disconnect.
    server.wait_for_log("echo: after close websocket.disconnect code=4001")


def test_the_app_sees_the_clients_close_code_and_reason(m0_server):
    server = m0_server(asgi_config("ws_apps:echo"))
    with ws_connect(server) as ws:
        recv(ws)
        ws.close(4002, "client leaves")
    server.wait_for_log("echo: disconnect code=4002 reason='client leaves'")


def test_a_client_that_vanishes_is_a_disconnect_1006(m0_server):
    server = m0_server(asgi_config("ws_apps:echo"))
    s = raw_upgrade(server)
    assert read_frame(s)[0] == 0x1  # the scope: the app accepted
    s.sendall(client_frame(0x1, b"ping?"))
    assert read_frame(s) == (0x1, b"ping?")
    reset(s)
    server.wait_for_log("echo: disconnect code=1006")


def test_send_after_the_disconnect_raises_an_oserror(m0_server):
    server = m0_server(asgi_config("ws_apps:send_after_disconnect"))
    with ws_connect(server) as ws:
        ws.close(1000)
    server.wait_for_log("late: websocket.disconnect code=1000")
    server.wait_for_log("late: send raised ClientDisconnected")
    assert "Traceback" not in server.output()


# --- before accept: refusals ---------------------------------------------------

def test_close_before_accept_is_403(m0_server):
    server = m0_server(asgi_config("ws_apps:gatekeeper"))
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(server, "/ws?deny=close")
    assert refused.value.response.status_code == 403
    server.wait_for_log("gatekeeper: after the answer websocket.disconnect")
    # The same app accepts when it wants to.
    with ws_connect(server) as ws:
        assert recv(ws) == "welcome"


def test_websocket_http_response_denies_with_the_apps_response(m0_server):
    server = m0_server(asgi_config("ws_apps:gatekeeper"))
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(server, "/ws?deny=response")
    response = refused.value.response
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Token"
    assert response.headers["Content-Type"] == "text/plain"
    assert response.body == b"no entry"
    server.wait_for_log("gatekeeper: after the answer websocket.disconnect")


@pytest.mark.parametrize("how,logged", [("raise", "ValueError: gatekeeper refuses by raising"),
                                        ("return", "returned without accepting or closing the WebSocket")])
def test_an_app_that_fails_before_accept_answers_500(m0_server, how, logged):
    server = m0_server(asgi_config("ws_apps:gatekeeper"))
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(server, f"/ws?deny={how}")
    assert refused.value.response.status_code == 500
    assert b"Traceback" not in refused.value.response.body
    server.wait_for_log(logged)


def test_a_malformed_handshake_never_reaches_the_app(m0_server):
    server = m0_server(asgi_config("ws_apps:echo"))
    r = m0test.request(server.port, "GET", "/ws", headers={
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "short"})
    assert r.status == 400
    assert r.header("Sec-WebSocket-Version") == "13"
    # A plain request is the http scope.
    assert m0test.request(server.port, "GET", "/ws").body == b"plain http"


# --- errors and shutdown -----------------------------------------------------------

def test_an_exception_after_accept_closes_1011_and_is_logged(m0_server):
    server = m0_server(asgi_config("ws_apps:crash_after_accept"))
    with ws_connect(server) as ws:
        ws.send("boom")
        with pytest.raises(ConnectionClosedError) as closed:
            recv(ws)
    assert closed.value.rcvd.code == 1011
    server.wait_for_log("RuntimeError: crash_after_accept: the app broke")
    assert "Traceback" in server.output()


def test_sigterm_closes_1001_and_the_app_sees_the_disconnect(m0_server):
    server = m0_server(asgi_config("ws_apps:drained"))
    with ws_connect(server) as ws:
        server.wait_for_log("drained: accepted")
        server.send_signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosedOK) as closed:
            recv(ws)
    assert closed.value.rcvd.code == 1001
    assert server.stop(timeout=30) == 0
    out = server.output()
    assert "drained: websocket.disconnect code=1001" in out, out
    assert "force-closed 0" in out, out
    assert "asyncio: loop 0 closed; 0 task(s) still running were cancelled" in out, out


# --- flow control ----------------------------------------------------------------

def test_a_slow_app_stops_m0_reading_instead_of_buffering(m0_server):
    # At most 4 messages (or 64 KiB) wait for the app: m0 then stops reading
    # and the client's sends block (TCP flow control), far from its 64 MiB.
    server = m0_server(asgi_config("ws_apps:slow_reader", frontend_extra="  websocket: {max_queue: 4, max_message_size: 64k}\n"),
                       env=m0test.rss_env())
    total, size = 64 * 1024 * 1024, 64 * 1024
    before = m0test.rss_kib(server.proc.pid)
    sent = threading.Event()
    with ws_connect(server, f"/ws?expect={total}", compression=None) as ws:
        server.wait_for_log("slow_reader: not reading")

        def send_all():
            try:
                for _ in range(total // size):
                    ws.send(b"z" * size)
                sent.set()
            except Exception:  # the socket shut down below: the test failed already
                pass
        # The client's sends block for as long as m0 does not read: a daemon
        # thread, and the socket shut down if the test fails, so that a failure
        # is reported instead of leaving a blocked send behind.
        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        try:
            m0_port, client_port = server.port, ws.socket.getsockname()[1]
            # m0 stopped reading: what the client sent backs up in the sockets'
            # buffers (an m0 that kept reading would take all 64 MiB into
            # memory and the sends would end).
            server.wait_until(lambda: sent.is_set() or m0test.backed_up_bytes(m0_port, client_port) >= 2 * size,
                              timeout=60, what="the client's sends to back up in the sockets")
            assert not sent.is_set(), "m0 read 64 MiB for an app that reads nothing"
            assert m0test.rss_kib(server.proc.pid) - before < 32 * 1024
            # The app catches up: everything arrives, in order, and the sends end.
            with ws_connect(server, "/ws?release=1"):
                pass
            assert ws.recv(timeout=m0test.scaled(60)) == f"got {total}"
            sender.join(timeout=m0test.scaled(60))
            assert sent.is_set()
        finally:
            if not sent.is_set():
                ws.socket.shutdown(socket.SHUT_RDWR)
                sender.join(timeout=m0test.scaled(10))


def test_a_client_that_does_not_read_makes_send_wait(m0_server):
    # send() waits while more than send_buffer is queued: a client that never
    # reads stalls the app instead of filling m0's memory, and its reset
    # ends the wait with an OSError.
    server = m0_server(asgi_config("ws_apps:firehose"), env=m0test.rss_env())
    before = m0test.rss_kib(server.proc.pid)
    size = 64 * 1024
    s = raw_upgrade(server, f"/ws?n=100000&size={size}")
    waits = server.wait_for_log(re.compile(r"firehose: send (\d+) waits for room"), timeout=30)
    # What the kernel's socket buffers hold, not the 6 GiB the app means to send.
    assert int(waits.group(1)) * size < 64 * 1024 * 1024
    assert m0test.rss_kib(server.proc.pid) - before < 64 * 1024
    reset(s)
    server.wait_for_log("firehose: stopped by the client after")
    assert "Traceback" not in server.output()


# --- many clients -------------------------------------------------------------------

def test_many_clients_that_vanish_leave_no_task_behind(m0_server):
    server = m0_server(asgi_config("ws_apps:tasks"), threads=2)
    clients = []
    for _ in range(300):
        s = raw_upgrade(server)
        clients.append(s)
    for s in clients:
        assert read_frame(s) == (0x1, b"ready")
    for s in clients:
        reset(s)
    server.wait_until(lambda: m0test.request(server.port, "GET", "/tasks", timeout=30).body == b"0",
                      timeout=120, what="every WebSocket Task to end")
    assert server.stop() == 0
    out = server.output()
    assert "asyncio: loop 0 closed; 0 task(s) still running were cancelled" in out, out
    assert "Traceback" not in out
