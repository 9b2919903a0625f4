"""The realtime hold path end to end: a plain WSGI view holds its connection
with environ["m0.hold"] (SSE or long-poll) and returns; m0.publish() from
any view or thread reaches it; outbox limits; a drain ends every hold."""
import os
import re
import signal
import socket
import threading

import pytest

import m0test
from support.wsgi_deployment import wsgi_config
from support.sse_stream import StreamReader

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")


def config(realtime="{}", threads=2, drain_timeout="10s", executor="pool"):
    return wsgi_config("hold_apps:app", APPS, drain_timeout, threads, executor, realtime)


def send_get(sock, path):
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())


def publish(server, data, channel="news", event=None):
    path = f"/publish?channel={channel}" + (f"&event={event}" if event else "")
    assert m0test.request(server.port, "POST", path, body=data).status == 204


def open_hold(server, query, tag, count=1):
    """A connection whose GET /hold?… the view has held (its log line seen)."""
    sock = server.connect(timeout=20)
    send_get(sock, f"/hold?{query}&tag={tag}")
    server.wait_for_log(f"held {tag}", count=count)
    return sock, StreamReader(sock, timeout=20)


def test_sse_delivers_each_publish_as_an_event(m0_server):
    server = m0_server(config())
    sock, reader = open_hold(server, "mode=sse&channels=news,other", "sse")
    with sock:
        status, headers = reader.head()
        assert status == 200
        assert ("content-type", "text/event-stream") in headers
        assert ("set-cookie", "seen=1") in headers  # the view's extra header is kept
        assert ("transfer-encoding", "chunked") in headers
        publish(server, b"hello", event="greet")
        assert reader.event() == {"event": "greet", "data": "hello"}
        publish(server, b"two\nlines\r\nhere")
        assert reader.event() == {"data": "two\nlines\nhere"}
        publish(server, b"elsewhere", channel="other")
        assert reader.event() == {"data": "elsewhere"}
        publish(server, b"not mine", channel="unrelated")
        assert m0test.request(server.port, "GET", "/publish-from-thread?data=threaded").status == 204
        assert reader.event() == {"data": "threaded"}  # "not mine" never came
        assert b"not sent" not in reader.buf


def test_a_hold_keeps_no_header_of_a_refused_or_earlier_response(m0_server):
    # One pool thread: the earlier response's headers were made on it.
    server = m0_server(config(threads=1))
    for _ in range(2):
        sock, reader = open_hold(server, "mode=sse", "cookie")
        with sock:
            assert ("set-cookie", "seen=1") in reader.head()[1]
    sock = server.connect(timeout=20)
    with sock:
        send_get(sock, "/hold-after-refused-headers?tag=refused")
        server.wait_for_log("held refused")
        status, headers = StreamReader(sock, timeout=20).head()
        assert status == 200
        assert not [h for h in headers if h[0] in ("x-partial", "set-cookie")], headers


def test_sse_heartbeat_is_a_comment(m0_server):
    server = m0_server(config("{sse: {heartbeat: 50ms}}"))
    sock, reader = open_hold(server, "mode=sse", "hb")
    with sock:
        assert reader.head()[0] == 200
        assert reader.chunk() == b":\n\n"


def test_poll_answers_the_first_message_then_keeps_alive(m0_server):
    server = m0_server(config())
    sock, reader = open_hold(server, "mode=poll", "p1")
    with sock:
        publish(server, b"first")
        resp = reader.read()
        assert (resp.status, resp.body) == (200, b"first")
        assert resp.header("Set-Cookie") == "seen=1"
        # The same connection serves the next request: a poll that times out.
        send_get(sock, "/hold?mode=poll&timeout=0.05&tag=p2")
        resp = reader.read()
        assert resp.status == 204 and resp.body == b""
        send_get(sock, "/nowhere")
        assert reader.read().status == 404


def test_hold_under_the_inline_executor(m0_server):
    # The view runs on the reactor itself: the hold is attached as its job
    # completes there, as on the pool.
    server = m0_server(config(executor="inline"))
    sock, reader = open_hold(server, "mode=sse", "inline")
    with sock:
        assert reader.head()[0] == 200
        publish(server, b"on the reactor")
        assert reader.event() == {"data": "on the reactor"}


def publish_burst(server, count, size=100):
    """Publishes `count` messages from one view; returns their data in order."""
    assert m0test.request(server.port, "GET", f"/publish-many?count={count}&size={size}",
                          timeout=60).status == 204
    return [f"{i:08d}" + "x" * size for i in range(count)]


def test_a_burst_leaves_in_one_write_per_stream_whole_and_in_order(m0_server):
    # Under the inline executor the publishing view runs on the reactor, so
    # the whole burst waits in the reactor's mailbox before the fan-out
    # runs: each stream gets its 50 events in one write, each event whole
    # and in publish order.
    server = m0_server(config(executor="inline"))
    holds = [open_hold(server, "mode=sse", f"burst{i}") for i in range(3)]
    for _, reader in holds:
        assert reader.head()[0] == 200
    expected = publish_burst(server, 50)
    for sock, reader in holds:
        with sock:
            assert [reader.event()["data"] for _ in expected] == expected
    assert server.stop() == 0
    assert "150 messages delivered (SSE: 3 writes)" in server.output()


def test_a_burst_over_the_outbox_bound_reaches_a_reader_that_keeps_up(m0_server):
    # The burst arrives in one fan-out pass. What the pass queued is written
    # before the bound is judged, so only a reader that falls behind
    # overflows, not one whose connection takes every byte at once.
    server = m0_server(config("{outbox: {max_messages: 4}}", executor="inline"))
    sock, reader = open_hold(server, "mode=sse", "keeps-up")
    with sock:
        assert reader.head()[0] == 200
        expected = publish_burst(server, 50)
        assert [reader.event()["data"] for _ in expected] == expected
    assert server.stop() == 0
    assert "0 holds closed by outbox overflow" in server.output()


def test_a_publish_before_the_reactor_attached_the_hold_is_kept(m0_server):
    # The view publishes on its own channel after holding: the message lands
    # before the job completes, in the hold's outbox.
    server = m0_server(config())
    sock, reader = open_hold(server, "mode=poll&channels=self", "self")
    with sock:
        publish(server, b"queued", channel="self")
        assert reader.read().body == b"queued"


def test_bad_hold_arguments_raise_in_the_view(m0_server):
    server = m0_server(config())
    cases = {
        "mode=chat": "ValueError: m0.hold(): mode must be 'sse', 'poll' or 'ws', not 'chat'",
        "mode=ws": "ValueError: m0.hold(): not a WebSocket handshake: ",
        "mode=sse&timeout=soon": "TypeError",
        "empty=1": "ValueError: m0.hold(): no channel given",
    }
    for query, expected in cases.items():
        resp = m0test.request(server.port, "GET", f"/bad-hold?{query}")
        assert resp.status == 400 and resp.body.decode().startswith(expected), (query, resp.body)
    resp = m0test.request(server.port, "GET", "/publish-errors")
    assert resp.body == b'{"channel": "TypeError", "data": "TypeError", "event": "ValueError"}'


def test_a_view_that_raises_after_holding_gets_500_and_unsubscribes(m0_server):
    server = m0_server(config())
    assert m0test.request(server.port, "GET", "/hold-then-raise").status == 500
    publish(server, b"nobody")  # nothing holds "news": no crash, nothing sent
    sock, reader = open_hold(server, "mode=poll", "after")
    with sock:
        publish(server, b"somebody")
        assert reader.read().body == b"somebody"


def burst_against_a_slow_reader(server, count, size):
    """Holds an SSE stream with a tiny receive buffer, publishes `count`
    messages of `size` bytes while not reading, then reads it all: returns
    the data of the events received and whether the stream ended."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    with sock:
        send_get(sock, "/hold?mode=sse&tag=slow")
        server.wait_for_log("held slow")
        reader = StreamReader(sock, timeout=30)
        assert reader.head()[0] == 200
        assert m0test.request(server.port, "GET", f"/publish-many?count={count}&size={size}",
                              timeout=60).status == 204
        received = []
        while True:
            sock.settimeout(m0test.scaled(30))
            ev = reader.event()
            if ev is None:
                return received, True
            received.append(ev["data"])
            if ev["data"].startswith(f"{count - 1:08d}"):
                return received, False


# Inline: the burst reaches the reactor in one fan-out pass, queued at once.
@pytest.mark.parametrize("executor", ["pool", "inline"])
def test_outbox_overflow_closes_the_stream_by_default(m0_server, executor):
    server = m0_server(config("{outbox: {max_messages: 4, max_bytes: 1m}}", executor=executor))
    received, ended = burst_against_a_slow_reader(server, count=100, size=128 * 1024)
    assert ended and len(received) < 100  # a clean end (final chunk), not the whole burst
    assert server.stop() == 0
    assert "1 holds closed by outbox overflow" in server.output()


@pytest.mark.parametrize("executor", ["pool", "inline"])
def test_outbox_overflow_drop_oldest_keeps_the_stream_and_the_newest(m0_server, executor):
    server = m0_server(config("{outbox: {max_messages: 4, overflow: drop_oldest}}", executor=executor))
    received, ended = burst_against_a_slow_reader(server, count=100, size=128 * 1024)
    assert not ended and received[-1].startswith("00000099") and len(received) < 100
    assert server.stop() == 0
    dropped = int(re.search(r"(\d+) dropped", server.output()).group(1))
    assert dropped == 100 - len(received)


def test_drain_ends_every_hold_cleanly(m0_server):
    server = m0_server(config())
    sse, sse_reader = open_hold(server, "mode=sse", "d1")
    poll, poll_reader = open_hold(server, "mode=poll", "d2")
    with sse, poll:
        assert sse_reader.head()[0] == 200
        server.send_signal(signal.SIGTERM)
        assert sse_reader.event() is None  # the final chunk: a clean end
        assert poll_reader.read().status == 204
        assert server.wait(timeout=20) == 0
    log = server.output()
    assert "2 holds, 2 ended by the drain" in log
    # Ended by m0, not cut at the drain deadline.
    assert "force-closed 0, in flight at deadline 0" in log, log


@pytest.mark.parametrize("ring", ["1", "0"])
def test_registration_race_publish_reaches_a_subscriber_behind_slow_views(m0_server, ring):
    """4 pool threads; two slow views occupy two; a subscriber holds while
    they do; a publish after that must reach it while the slow views still
    run. 20 rounds, each on a fresh server. The slow views block until
    released instead of sleeping 1.5 s, so each step waits for its event
    (the views started, the hold subscribed, the event delivered) and a
    round costs a server start, not seconds of sleep. Even rounds publish
    once the view has returned (its 200 head arrived), odd rounds as soon as
    it has subscribed (the message may wait in the outbox for the attach)."""
    for round_ in range(20):
        server = m0_server(config(threads=4), env={"M0_POOL_RING": ring})
        slow = [server.connect(timeout=20) for _ in range(2)]
        for s in slow:
            send_get(s, "/slow")
        server.wait_for_log("slow started", count=2)
        sub = server.connect(timeout=20)
        send_get(sub, f"/hold?mode=sse&tag=r{round_}")
        reader = StreamReader(sub, timeout=20)
        server.wait_for_log(f"held r{round_}")
        if round_ % 2 == 0:
            assert reader.head()[0] == 200
            publish(server, f"round {round_}".encode())
        else:
            publish(server, f"round {round_}".encode())
            assert reader.head()[0] == 200
        assert reader.event() == {"data": f"round {round_}"}, f"round {round_} (ring={ring})"
        # Delivered while both slow views still held their threads: neither
        # has answered.
        for s in slow:
            s.setblocking(False)
            with pytest.raises(BlockingIOError):
                s.recv(1, socket.MSG_PEEK)
            s.settimeout(m0test.scaled(20))
        assert m0test.request(server.port, "GET", "/release").status == 204
        for s in slow:
            assert m0test.ResponseReader(s, timeout=20).read().body == b"slow done"
            s.close()
        sub.close()
        assert server.stop() == 0


def test_memory_bus_under_several_processes_is_refused(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(config())
    r = m0test.run_m0("--config", str(path), "--check", "--set", "server.workers=2")
    assert r.returncode == 2, r.stderr
    assert "realtime.bus" in r.stderr and "redis://" in r.stderr, r.stderr


def test_realtime_keys_are_checked(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(config("{outbox: {overflow: block}}"))
    r = m0test.run_m0("--config", str(path), "--check")
    assert r.returncode == 2 and "realtime.outbox.overflow" in r.stderr, r.stderr
