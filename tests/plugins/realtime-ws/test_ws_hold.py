"""WebSocket holds end to end: a plain synchronous WSGI view holds its
connection with environ["m0.hold"](channels, "ws", on_message=...) and
returns; each inbound message calls on_message(conn, message) on the pool,
in order; conn works from any thread; m0.publish() reaches the holds; the
outbox bounds slow clients (1013); a drain ends every hold with 1001."""
import os
import signal
import socket
import struct
import threading

import pytest
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

import m0test
from support.wsgi_deployment import wsgi_config
from support import websocket_client
from support.websocket_client import recv
from support.websocket_frames import client_frame, raw_upgrade, read_close, read_frame

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")


def config(realtime="{}", threads=4, drain_timeout="10s", executor="pool"):
    return wsgi_config("ws_apps:app", APPS, drain_timeout, threads, executor, realtime)


def ws_connect(server, query="", **kwargs):
    return websocket_client.ws_connect(server, f"/ws?{query}", **kwargs)


def closed_by_server(ws):
    """Reads until the connection ends; returns (messages read, the close
    frame m0 sent)."""
    received = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            received.append(recv(ws))
    return received, closed.value.rcvd


def publish(server, data, channel="news"):
    """m0.publish() of `data` as it is: str or bytes."""
    text = "" if isinstance(data, bytes) else "&text=1"
    body = data if isinstance(data, bytes) else data.encode()
    assert m0test.request(server.port, "POST", f"/publish?channel={channel}{text}", body=body).status == 204


def test_a_request_that_is_no_handshake_raises_in_the_view_which_answers_400(m0_server):
    server = m0_server(config())
    resp = m0test.request(server.port, "GET", "/ws")
    assert resp.status == 400
    assert resp.body.startswith(b"m0.hold(): not a WebSocket handshake: "), resp.body
    # A bad key: the reason names it.
    resp = m0test.request(server.port, "GET", "/ws", headers={
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "short"})
    assert resp.status == 400 and b"Sec-WebSocket-Key" in resp.body, resp.body
    # The server keeps serving holds.
    with ws_connect(server) as ws:
        ws.send("still here")
        assert recv(ws) == "still here"


def test_text_stays_text_and_binary_binary_and_the_views_cookie_rides_on_the_101(m0_server):
    server = m0_server(config())
    with ws_connect(server, "tag=t") as ws:
        assert ws.response.status_code == 101
        assert ws.response.headers["Set-Cookie"] == "room=1"
        assert "Content-Type" not in ws.response.headers  # the view's body headers are dropped
        ws.send("héllo")
        assert recv(ws) == "héllo"
        ws.send(b"\x00\xffbytes")
        assert recv(ws) == b"\x00\xffbytes"


def test_on_message_sees_every_message_in_order_on_a_pool_of_several_threads(m0_server):
    server = m0_server(config(threads=4))
    count = 1000
    with ws_connect(server) as a, ws_connect(server) as b:
        # Two connections at once, so the pool's threads interleave them.
        for i in range(count):
            a.send(f"seq:{i}")
            b.send(f"seq:{i}")
        for ws in (a, b):
            assert [recv(ws) for _ in range(count)] == [f"seq:{i}" for i in range(count)]
            ws.send("seen")
            assert recv(ws) == ",".join(map(str, range(count)))


def test_a_slow_on_message_stops_m0_reading_the_client_instead_of_queueing(m0_server):
    server = m0_server(config())
    sock = raw_upgrade(server, path="/ws?tag=flood")
    with sock:
        sock.sendall(client_frame(0x1, b"block"))
        # 40 MiB: more than the kernel's socket buffers on both ends can hold
        # (a few MiB), so the sender cannot finish unless m0 reads on.
        count, size = 640, 64 * 1024
        payloads = [f"note:{i}:".encode() + b"x" * size for i in range(count)]
        # m0 stops reading once about 1 MiB waits for on_message, so this
        # sendall blocks until the application catches up.
        flood = b"".join(client_frame(0x1, p) for p in payloads)
        sender = threading.Thread(target=lambda: sock.sendall(flood))
        sender.start()
        client_port = sock.getsockname()[1]
        # Had m0 read on (queueing for on_message), the client's writes
        # would drain; they back up in the sockets instead.
        server.wait_until(lambda: m0test.backed_up_bytes(server.port, client_port) >= 64 * 1024,
                          what="the client's flood to back up while on_message is blocked")
        # The negative check: a server queueing for on_message would take the
        # whole flood within milliseconds and let the sender finish.
        sender.join(timeout=m0test.scaled(2))
        assert sender.is_alive(), "m0 read the whole flood while on_message was blocked"
        assert m0test.request(server.port, "GET", "/unblock").status == 204
        sender.join(timeout=m0test.scaled(30))
        assert not sender.is_alive()
        sock.sendall(client_frame(0x1, b"seen"))  # every message reached on_message, in order
        assert read_frame(sock) == (0x1, ",".join(map(str, range(count))).encode())


def test_conn_methods_work_from_another_thread(m0_server):
    server = m0_server(config())
    with ws_connect(server) as ws:
        ws.send("id")
        conn_id = int(recv(ws))
        ws.send("thread")
        assert recv(ws) == f"thread {conn_id}"
        assert recv(ws) == "published to the thread's channel"
        assert recv(ws) == "thread done"  # "not after unsubscribe" never came
        received, close = closed_by_server(ws)
        assert received == [] and (close.code, close.reason) == (4000, "thread closed")


def test_subscribe_and_unsubscribe_from_on_message_and_ids_are_unique(m0_server):
    server = m0_server(config())
    with ws_connect(server, "channels=") as a, ws_connect(server, "channels=") as b:
        a.send("id")
        b.send("id")
        assert recv(a) != recv(b)
        a.send("sub:room")
        assert recv(a) == "subscribed room"
        publish(server, "to the room", channel="room")
        assert recv(a) == "to the room"
        a.send("unsub:room")
        assert recv(a) == "unsubscribed room"
        publish(server, "after unsubscribe", channel="room")
        a.send("marker")
        assert recv(a) == "marker"  # the publish never arrived before it
        b.send("close:1000")
        assert closed_by_server(b)[1].code == 1000


def test_a_publish_reaches_every_ws_hold_as_text_or_binary(m0_server):
    server = m0_server(config())
    with ws_connect(server, "channels=news,other") as a, ws_connect(server, "mute=1") as muted:
        publish(server, "text news")
        publish(server, b"\x01binary news")
        publish(server, "other news", channel="other")
        assert [recv(a) for _ in range(3)] == ["text news", b"\x01binary news", "other news"]
        # Without on_message the client's messages are read and dropped; the
        # hold still receives its channel.
        muted.send("ignored")
        assert recv(muted) == "text news"
        assert recv(muted) == b"\x01binary news"


def test_an_exception_in_on_message_is_logged_and_closes_with_1011(m0_server):
    server = m0_server(config())
    # Both messages in one write: the second is surely on its way before
    # m0's close could reach the client (a client library refuses to send
    # once it has seen the close).
    with raw_upgrade(server) as sock:
        sock.sendall(client_frame(0x1, b"raise") + client_frame(0x1, b"after the failure"))
        # No echo of the second (on_message is not called again): the close is next.
        assert read_close(sock)[0] == 1011
    log = server.wait_for_log("RuntimeError: on_message failed on purpose").string
    assert "on_message raised:\nTraceback (most recent call last):" in log
    with ws_connect(server) as ws:  # and m0 keeps serving
        ws.send("next")
        assert recv(ws) == "next"


def test_hold_arguments_for_ws_are_checked(m0_server):
    server = m0_server(config())
    with ws_connect(server, "tag=ok"):
        pass
    # on_message outside ws, and a non-callable one, raise in the view.
    resp = m0test.request(server.port, "GET", "/ws-bad-args")
    assert resp.status == 200, resp.body
    assert resp.body == b"ValueError: m0.hold(): on_message is for mode='ws' only|" \
                        b"TypeError: m0.hold(): on_message must be callable, not int"


def test_outbox_overflow_closes_with_1013(m0_server):
    server = m0_server(config("{outbox: {max_messages: 4, max_bytes: 1m}}"))
    # A raw client with a tiny receive buffer that reads nothing while the
    # burst is published, so TCP backs up into m0's outbox.
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(m0test.scaled(30))
    sock.connect(("127.0.0.1", server.port))
    with raw_upgrade(server, path="/ws?tag=slow", sock=sock):
        server.wait_for_log("held slow")
        assert m0test.request(server.port, "GET", "/publish-many?count=100&size=131072", timeout=60).status == 204
        received = 0
        while True:
            opcode, payload = read_frame(sock)
            if opcode == 0x8:
                break
            received += 1
        assert struct.unpack("!H", payload[:2])[0] == 1013 and payload[2:] == b"outbox overflow"
        assert received < 100
        sock.sendall(client_frame(0x8, payload[:2]))
    assert server.stop() == 0
    assert "1 holds closed by outbox overflow" in server.output()


def test_drain_closes_every_ws_hold_with_1001_within_the_drain_timeout(m0_server):
    server = m0_server(config(drain_timeout="20s"))
    with ws_connect(server) as a, ws_connect(server, "mute=1") as b:
        a.send("ready")
        assert recv(a) == "ready"
        server.send_signal(signal.SIGTERM)
        for ws in (a, b):
            with pytest.raises(ConnectionClosedOK):
                recv(ws)
            assert ws.close_code == 1001
        assert server.wait(timeout=20) == 0
    log = server.output()
    assert "2 holds, 2 ended by the drain" in log
    assert "force-closed 0, in flight at deadline 0" in log, log


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_a_client_vanishing_mid_stream_leaves_nothing_behind(m0_server):
    server = m0_server(config())
    with ws_connect(server) as ws:  # warms the pool's threads and the interpreter
        ws.send("warm")
        assert recv(ws) == "warm"
    # The client's close() returned once m0 closed the TCP connection.
    baseline = open_fds(server.proc.pid)
    sock = raw_upgrade(server, path="/ws?tag=vanish")
    sock.sendall(client_frame(0x1, b"seq:1"))
    assert read_frame(sock) == (0x1, b"seq:1")
    # Reset mid-stream: RST instead of a close frame, messages still coming.
    m0test.request(server.port, "GET", "/publish-many?count=50&size=1024", timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    m0test.request(server.port, "GET", "/publish-many?count=50&size=1024", timeout=30)
    server.wait_until(lambda: open_fds(server.proc.pid) <= baseline, what="m0 to close the vanished connection")
    with ws_connect(server) as other:
        publish(server, "still serving")
        assert recv(other) == "still serving"
    assert server.stop() == 0


def test_ws_holds_under_the_inline_executor(m0_server):
    server = m0_server(config(executor="inline"))
    with ws_connect(server) as ws:
        for i in range(20):
            ws.send(f"seq:{i}")
        assert [recv(ws) for _ in range(20)] == [f"seq:{i}" for i in range(20)]
        publish(server, "on the reactor")
        assert recv(ws) == "on the reactor"


def test_websocket_keys_apply_to_ws_holds(m0_server):
    server = m0_server(config("{websocket: {max_message_size: 1k, permessage_deflate: false}}"))
    with ws_connect(server) as ws:
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
        ws.send("x" * 1025)
        received, close = closed_by_server(ws)
        assert close.code == 1009


def test_websocket_keys_are_checked(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(config("{websocket: {max_mesage_size: 1k}}"))
    r = m0test.run_m0("--config", str(path), "--check")
    assert r.returncode == 2 and "realtime.websocket" in r.stderr and "max_message_size" in r.stderr, r.stderr
