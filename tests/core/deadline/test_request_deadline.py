"""Request deadlines (server.request_timeout) with real WSGI views: a view
stuck in time.sleep gets the client a 504, its stack in the log, its thread
written off and replaced; a view waking after its deadline reaches nobody; a
C call holding the GIL, too many threads written off and a stuck inline
reactor give the process up (a supervisor replaces it; alone it exits with
code 3); a slow upload, a slow reader and a view that extends its own
deadline are not stuck. Deadlines here are short, margins generous; nothing
asserts a time beyond the deadline itself."""
import json
import os
import re
import socket
import sys
import time

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(HERE, "apps")
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "telemetry"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "http2"))
from metrics_support import metrics_port, samples, status, value  # noqa: E402

PYTHON = {"VIRTUAL_ENV": sys.prefix}
# The deadline the tests give: one second, longer in a sanitizer run (where
# a trivial view on two busy cores may take a while), so that only the views
# meant to be stuck are.
DEADLINE = f"{int(m0test.scaled(1000))}ms"
DEADLINE_LINE = re.compile(r"request deadline: GET (\S+) \(mount /, .*executor 'default' \(pool\)\) produced nothing for")


def config(executor="pool", timeout=DEADLINE, server="", extra="", threads=2):
    pool = f"  pool: {{threads: {threads}, max_threads: {threads}}}\n" if executor == "pool" else ""
    return (
        "server:\n"
        f"  request_timeout: {timeout}\n"
        "  drain_timeout: 3s\n"
        f"{server}"
        "frontend:\n"
        "  type: wsgi\n"
        "  app: \"deadline_apps:app\"\n"
        f"  chdir: {APPS}\n"
        "  input_buffer: 4k\n"
        "executor:\n"
        f"  type: {executor}\n"
        f"{pool}"
        "metrics: {listen: \"127.0.0.1:0\"}\n"
        f"{extra}"
    )


POOL = {"executor": "default", "type": "pool"}


def get(server, path, timeout=30):
    return m0test.request(server.port, path=path, timeout=m0test.scaled(timeout))


def test_a_stuck_view_gets_504_its_stack_logged_and_its_thread_replaced(m0_server):
    server = m0_server(config(extra="log: {access: true, access_format: json}\n"), env=PYTHON)
    port = metrics_port(server)
    r = get(server, "/sleep?s=600")
    assert r.status == 504
    line = server.wait_for_log(DEADLINE_LINE)
    assert line.group(1) == "/sleep"
    log = server.output()
    # Where it was stuck: the view's frames, read from outside the thread.
    assert "in sleep_in_view" in log and "deadline_apps.py" in log, log
    assert "its thread is written off and replaced (1 of 4" in log
    # Both threads are free to serve: the stuck one no longer counts.
    for _ in range(4):
        assert get(server, "/fast").status == 200
    # The sampler publishes the executor's counters a few times a second.
    def counted():
        f = samples(port)
        written_off = value(f, "m0_executor_threads_written_off_total", **POOL)
        return f if value(f, "m0_executor_deadlines_total", **POOL) and written_off else None
    found = server.wait_until(counted, what="the deadline and the write-off in /metrics")
    assert value(found, "m0_executor_deadlines_total", **POOL) == 1
    assert value(found, "m0_executor_threads_written_off_total", **POOL) == 1
    assert value(found, "m0_executor_threads", state="written_off", **POOL) == 1
    assert value(found, "m0_request_deadlines_total", frontend="wsgi", mount="/") == 1
    x = next(e for e in status(port)["executors"] if e["name"] == "default")
    assert (x["deadlines"], x["written_off"]) == (1, 1)
    # The access log says why the answer was a 504.
    entries = server.wait_until(lambda: [json.loads(l) for l in server.output().splitlines()
                                         if l.startswith("{") and '"/sleep"' in l], what="the access log line")
    assert (entries[0]["status"], entries[0]["outcome"]) == (504, "timeout")
    fast = [json.loads(l) for l in server.output().splitlines() if l.startswith("{") and '"/fast"' in l]
    assert fast and all(e["outcome"] == "ok" for e in fast)


def test_a_view_waking_after_its_deadline_reaches_nobody(m0_server):
    server = m0_server(config(), env=PYTHON)
    port = metrics_port(server)
    with server.connect() as s:
        # Wakes after its deadline (2.5 of them), long before the test gives up.
        s.sendall(b"GET /sleep?s=%.1f HTTP/1.1\r\nHost: t\r\n\r\n" % m0test.scaled(2.5))
        reader = m0test.ResponseReader(s, timeout=m0test.scaled(30))
        first = reader.read()
        assert (first.status, first.body) == (504, b"Gateway Timeout\n")
        # The thread comes back from its view: its late answer is dropped,
        # it leaves, and the connection serves the next request normally.
        server.wait_until(lambda: value(samples(port), "m0_executor_threads", state="written_off", **POOL) == 0,
                          timeout=30, what="the written-off thread to return")
        s.sendall(b"GET /fast HTTP/1.1\r\nHost: t\r\n\r\n")
        second = reader.read()
        assert second.status == 200
    assert b"slept" not in first.body


def test_a_stream_stalled_after_its_head_is_aborted(m0_server):
    server = m0_server(config(), env=PYTHON)
    with server.connect() as s:
        s.sendall(b"GET /stall-stream HTTP/1.1\r\nHost: t\r\n\r\n")
        raw = m0test.recv_until_closed(s, timeout=m0test.scaled(30))
    # The head and the first piece went out; the connection then closes
    # without the chunked body's end, so no client takes it for complete.
    assert raw.startswith(b"HTTP/1.1 200 OK")
    assert b"first piece" in raw and not raw.endswith(b"0\r\n\r\n")
    server.wait_for_log(DEADLINE_LINE)
    assert get(server, "/fast").status == 200


def test_what_waits_on_the_client_or_produces_is_not_stuck(m0_server):
    server = m0_server(config(extra="http: {body_timeout: 30s}\n"), env=PYTHON)
    # A view producing a piece every 0.3 s for about 2 s: never silent for its deadline.
    r = get(server, "/drip?n=7&every=0.3")
    assert (r.status, r.body.count(b"piece")) == (200, 7)
    # A slow upload: the view waits on wsgi.input while the client takes 3 s.
    body = b"u" * 40_000
    with server.connect() as s:
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body))
        for i in range(0, len(body), 4000):
            s.sendall(body[i:i + 4000])
            time.sleep(0.3)
        r = m0test.ResponseReader(s, timeout=m0test.scaled(30)).read()
        assert (r.status, r.body) == (200, b"40000")
    # A slow reader of a 4 MiB stream: the view waits for room while the
    # client takes its time over 3 s.
    with server.connect() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.sendall(b"GET /download?n=64 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        got = 0
        started = time.monotonic()
        while True:
            data = s.recv(65536)
            if not data:
                break
            got += len(data)
            if time.monotonic() - started < 3:
                time.sleep(0.05)
        assert got > 64 * 65536
    # A view that extends its own deadline, and one that lifts it.
    slow = m0test.scaled(2)  # twice the deadline
    assert get(server, f"/extend?to=60&s={slow}").body == b"extended"
    assert get(server, f"/lift?s={slow}").body == b"lifted"
    assert DEADLINE_LINE.search(server.output()) is None, server.output()


def test_threads_written_off_up_to_the_bound_give_the_process_up(m0_server):
    server = m0_server(config(server="  max_written_off: 2\n"), env=PYTHON)
    assert get(server, "/sleep?s=600").status == 504
    assert get(server, "/sleep?s=600").status == 504
    server.wait_for_log("giving this process up: 2 threads are written off (server.max_written_off 2)")
    # Alone, it drains briefly and exits non-zero for its service manager.
    assert server.wait(timeout=60) == 3


def test_a_c_call_holding_the_gil_gives_the_process_up(m0_server):
    server = m0_server(config(), env=PYTHON)
    assert get(server, "/gil?s=600").status == 504
    server.wait_for_log("giving this process up: the application holds the interpreter past its deadline")
    assert "(holding the GIL)" in server.output()
    assert server.wait(timeout=60) == 3


def test_a_supervisor_replaces_a_process_that_gave_up(m0_server):
    server = m0_server(config(), "--workers", "2", env=PYTHON)
    r = get(server, "/gil?s=600")
    assert r.status == 504
    server.wait_for_log(re.compile(r"supervisor: replacing worker process \d \(pid \d+\): it gave up"))
    server.wait_for_log(re.compile(r"supervisor: worker process \d \(pid \d+\) serves; draining pid"))
    # Two processes serve again; the stuck one is gone.
    pids = {get(server, "/fast").body.split()[0] for _ in range(20)}
    assert pids and all(p.isdigit() for p in pids)
    assert server.proc.poll() is None


def test_a_stuck_view_on_the_inline_executor_gives_the_process_up(m0_server):
    # The view runs on the reactor: nothing but the watchdog sees it.
    server = m0_server(config(executor="inline"), env=PYTHON)
    with server.connect() as s:
        s.sendall(b"GET /sleep?s=600 HTTP/1.1\r\nHost: t\r\n\r\n")
        server.wait_for_log("giving this process up: a reactor thread did not come back", timeout=60)
    assert "in sleep_in_view" in server.output()
    assert server.wait(timeout=60) == 3


def test_a_websocket_message_stuck_in_on_message_closes_with_1011(m0_server):
    import pytest
    from websockets.exceptions import ConnectionClosed
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
    from support.websocket_client import recv, ws_connect
    server = m0_server(config(extra="realtime: {}\n"), env=PYTHON)
    with ws_connect(server) as ws:
        # The hold itself runs no application code: it is not timed, and a
        # message answered in time is no deadline either.
        time.sleep(m0test.scaled(1.5))
        ws.send("hello")
        assert recv(ws) == "hello"
        ws.send("stuck")
        with pytest.raises(ConnectionClosed) as closed:
            recv(ws)
    assert closed.value.rcvd.code == 1011
    assert server.wait_for_log(re.compile(r"request deadline: wsgi: GET /ws: on_message \(mount /")).group(0)
    assert "in sleep_in_view" in server.output()
    assert get(server, "/fast").status == 200


def test_http2_only_the_stuck_stream_is_answered(m0_server):
    import h2_support
    server = m0_server(config(), env=PYTHON)
    client = h2_support.Client(server.port, timeout=30)
    stuck = client.request("/sleep?s=600")
    r = client.response(stuck)
    assert r.status == 504
    # The connection and its other streams serve on.
    for _ in range(3):
        assert client.get("/fast").status == 200
    assert client.goaway is None


def asgi_config(app, timeout=DEADLINE, workers=""):
    return (
        "server:\n"
        f"  request_timeout: {timeout}\n"
        "  drain_timeout: 3s\n"
        f"{workers}"
        "frontend:\n"
        "  type: asgi\n"
        f"  app: \"{app}\"\n"
        f"  chdir: {APPS}\n"
        "executor:\n"
        "  type: asyncio\n"
        "metrics: {listen: \"127.0.0.1:0\"}\n"
    )


ASGI_LINE = re.compile(r"request deadline: GET (\S+) \(mount /, .*executor 'default' \(asyncio\)\) produced nothing for")


def test_asgi_a_route_awaiting_a_slow_call_is_cancelled(m0_server):
    server = m0_server(asgi_config("deadline_asgi:api"), env=PYTHON)
    assert get(server, "/slow").status == 504
    assert server.wait_for_log(ASGI_LINE).group(1) == "/slow"
    log = server.output()
    # Where it waited: the Task's await chain, down to the route.
    assert "the task awaits:" in log and "in slow" in log, log
    assert "it is asked to stop" in log
    # CancelledError reached the route at its await; the loop serves on.
    server.wait_until(lambda: get(server, "/cancelled").body == b'{"cancelled":1}', what="the route cancelled")
    assert get(server, "/fast").status == 200
    port = metrics_port(server)
    server.wait_until(lambda: value(samples(port), "m0_executor_deadlines_total", executor="default", type="asyncio") == 1,
                      what="the deadline in /metrics")


def test_asgi_a_sync_route_in_a_thread_is_answered_and_the_loop_serves_on(m0_server):
    # FastAPI runs a `def` route in a worker thread, which nothing can stop:
    # its Task is cancelled (it ends at once), the thread finishes on its own.
    server = m0_server(asgi_config("deadline_asgi:api"), env=PYTHON)
    assert get(server, "/sync-slow").status == 504
    server.wait_for_log(ASGI_LINE)
    for _ in range(3):
        assert get(server, "/fast").status == 200
    assert "giving this process up" not in server.output()


def test_asgi_a_coroutine_that_never_awaits_gives_the_process_up(m0_server):
    server = m0_server(asgi_config("deadline_asgi:raw"), env=PYTHON)
    assert get(server, "/block").status == 504
    server.wait_for_log("giving this process up: an application asked to stop at its deadline", timeout=60)
    assert "in raw" in server.output()
    assert server.wait(timeout=60) == 3


def test_asgi_an_app_swallowing_its_cancellation_gives_the_process_up(m0_server):
    server = m0_server(asgi_config("deadline_asgi:raw"), env=PYTHON)
    assert get(server, "/swallow").status == 504
    server.wait_for_log("giving this process up: an application asked to stop at its deadline", timeout=60)
    assert server.wait(timeout=60) == 3


def test_asgi_an_app_extends_its_own_deadline(m0_server):
    server = m0_server(asgi_config("deadline_asgi:raw"), env=PYTHON)
    r = get(server, "/extend")
    assert (r.status, r.body) == (200, b"extended")
    assert ASGI_LINE.search(server.output()) is None
