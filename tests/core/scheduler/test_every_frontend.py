"""Every frontend served end to end under each scheduler: a smoke per
frontend (static files, a native route, WSGI on the pool, ASGI on the
asyncio lane, a WebSocket, a realtime hold), not a second copy of their
suites, which run on the default scheduler."""
import json
import os
import signal
import sys

import pytest
from websockets.sync.client import connect

import m0test
from support.sse_stream import StreamReader

CONFIGS = os.path.join(m0test.SOURCE_DIR, "configs")
# The embedded interpreter runs in the test venv (Flask and FastAPI are there).
VENV = {"VIRTUAL_ENV": sys.prefix}
SCHEDULERS = {
    "reactors": ["--scheduler", "reactors"],
    "reactors-shared": ["--scheduler", "reactors", "--set", "scheduler.listener=shared"],
    "balanced": ["--scheduler", "balanced"],
}


@pytest.fixture(params=sorted(SCHEDULERS))
def scheduler(request):
    return request.param


def start(m0_server, scheduler, config):
    server = m0_server(os.path.join(CONFIGS, config), *SCHEDULERS[scheduler], threads=2, env=VENV)
    assert f"(scheduler {scheduler.split('-')[0]})" in server.output()
    return server


def test_static_native_wsgi_and_asgi(m0_server, scheduler):
    server = start(m0_server, scheduler, "hybrid.yaml")
    static = m0test.request(server.port, path="/static/")
    with open(os.path.join(m0test.SOURCE_DIR, "examples", "static-site", "index.html"), "rb") as f:
        assert (static.status, static.body) == (200, f.read())
    assert m0test.request(server.port, path="/health").body == b"ok"
    notes = m0test.request(server.port, path="/flask/api/notes")
    assert notes.status == 200 and json.loads(notes.body)["count"] == 2
    api = m0test.request(server.port, path="/api/")
    assert api.status == 200 and json.loads(api.body)["store_open"] is True
    assert server.stop() == 0


def test_websocket(m0_server, scheduler):
    server = start(m0_server, scheduler, "websocket-echo.yaml")
    with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=m0test.scaled(10), ping_interval=None) as ws:
        for text in ("one", "two" * 1000):
            ws.send(text)
            assert ws.recv(timeout=m0test.scaled(10)) == text
    assert server.stop() == 0


def test_a_held_stream_gets_what_a_post_publishes(m0_server, scheduler):
    server = start(m0_server, scheduler, "flask-realtime.yaml")
    sock = server.connect(timeout=20)
    with sock:
        sock.sendall(b"GET /events?room=lobby HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        stream = StreamReader(sock, timeout=20)
        status, headers = stream.head()
        assert status == 200 and ("content-type", "text/event-stream") in headers
        said = m0test.request(server.port, "POST", "/say", body=b"room=lobby&text=hello",
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert said.status == 204
        assert stream.event() == {"event": "message", "data": json.dumps({"room": "lobby", "text": "hello"})}
    assert server.stop() == 0


def test_the_stop_is_bounded_when_a_view_holds_its_reactor(m0_server, scheduler):
    # On the inline executor a view that sleeps holds the reactor thread
    # itself: past the drain deadline and its grace the scheduler leaves it
    # behind, reports it, and m0 exits.
    from support.wsgi_deployment import wsgi_config
    apps = os.path.join(m0test.SOURCE_DIR, "tests", "plugins", "frontend-wsgi", "apps")
    server = m0_server(wsgi_config("shutdown_apps:sleeps", apps, "1s", executor="inline"), *SCHEDULERS[scheduler],
                       threads=2)
    with server.connect() as s:
        s.sendall(b"GET /?30 HTTP/1.1\r\nHost: h\r\n\r\n")
        server.wait_for_log("sleeping 30.0 s", timeout=15)
        server.send_signal(signal.SIGTERM)
        # Exits long before the view's 30 s are up.
        assert server.proc.wait(timeout=m0test.scaled(15)) == 0, server.output()
        assert m0test.recv_until_closed(s, timeout=5) == b""
    out = server.output()
    assert "did not stop in time; detached" in out and "detached (did not stop)" in out, out
    assert "leaving 1 thread(s) inside application code" in out, out
