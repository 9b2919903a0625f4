"""ASGI 3.0 over real sockets, from the spec (asgi.readthedocs.io): the http
scope, request bodies, streamed responses, errors, lifespan, and the
executor the frontend needs."""
import json
import os
import subprocess
import tempfile
import time

import pytest

import m0test

from conftest import APPS, asgi_config, needs_asgi

pytestmark = needs_asgi


def wait_for_log(server, text, timeout=10.0):
    deadline = time.monotonic() + timeout
    while text not in server.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    return text in server.output()


def run_to_exit(config_text, timeout=30):
    """Runs m0 expected to exit at start-up; returns CompletedProcess."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(config_text)
    try:
        return m0test.run_m0("--config", f.name, "--listen", "127.0.0.1:0",
                             "--threads", "1", timeout=timeout)
    finally:
        os.unlink(f.name)


def unbytes(v):
    return v["bytes"].encode("latin-1")


def test_http_scope_has_every_key(m0_server):
    server = m0_server(asgi_config("asgi_apps:scope_echo"))
    r = m0test.request(server.port, "POST", "/caf%C3%A9/a%20b?x=1&y=%20",
                       headers={"X-Mixed-Case": "One", "x-mixed-case": "Two"}, body=b"hello")
    assert r.status == 200
    scope = json.loads(r.body)
    assert scope["type"] == "http"
    assert scope["asgi"] == {"version": "3.0", "spec_version": "2.5"}
    assert scope["http_version"] == "1.1"
    assert scope["method"] == "POST"
    assert scope["scheme"] == "http"
    assert scope["path"] == "/café/a b"
    assert unbytes(scope["raw_path"]) == b"/caf%C3%A9/a%20b"
    assert unbytes(scope["query_string"]) == b"x=1&y=%20"
    assert scope["root_path"] == ""
    headers = [(unbytes(k), unbytes(v)) for k, v in scope["headers"]]
    # Lower-cased names, arrival order, duplicates kept.
    assert [h for h in headers if h[0] == b"x-mixed-case"] == [(b"x-mixed-case", b"One"), (b"x-mixed-case", b"Two")]
    assert all(k == k.lower() for k, _ in headers)
    assert headers[0] == (b"host", b"127.0.0.1")
    assert scope["client"][0] == "127.0.0.1" and isinstance(scope["client"][1], int)
    assert scope["server"] == ["127.0.0.1", server.port]
    assert scope["state"] == {}
    assert scope["types"]["raw_path"] == "bytes" and scope["types"]["query_string"] == "bytes"
    assert scope["types"]["client"] == "tuple" and scope["types"]["server"] == "tuple"
    assert scope["body_len"] == 5


def test_header_fields_that_repeat_or_change_reach_each_request_as_sent(m0_server):
    """m0 shares the (name, value) pair of a field it has seen before: on one
    connection, fields that repeat, that change value under the same name,
    that come in many names (more than its slots), at and past its size
    bounds, in either case, reach every request's scope exactly as sent."""
    server = m0_server(asgi_config("asgi_apps:scope_echo"))
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for i in range(300):
            fields = [("X-Same", "constant"), ("X-Changing", f"value-{i}"), (f"X-Name-{i % 150}", "v"),
                      ("X-Bound", "b" * (192 + i % 2)), ("x-same", "Constant" if i % 3 else "constant")]
            head = "".join(f"{k}: {v}\r\n" for k, v in fields)
            s.sendall(f"GET /r{i} HTTP/1.1\r\nHost: h\r\n{head}\r\n".encode())
            r = reader.read()
            assert r.status == 200
            got = [(unbytes(k), unbytes(v)) for k, v in json.loads(r.body)["headers"]]
            assert got == [(b"host", b"h")] + [(k.lower().encode(), v.encode()) for k, v in fields], i


def test_http_10_scope(m0_server):
    server = m0_server(asgi_config("asgi_apps:scope_echo"))
    with server.connect() as s:
        s.sendall(b"GET /x HTTP/1.0\r\nHost: h\r\n\r\n")
        raw = m0test.recv_until_closed(s)
    scope = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    assert scope["http_version"] == "1.0"


@pytest.mark.parametrize("size", [0, 1, 100_000])
def test_body_echo_with_content_length(m0_server, size):
    server = m0_server(asgi_config("asgi_apps:echo"))
    body = bytes(i % 251 for i in range(size))
    r = m0test.request(server.port, "POST", "/", body=body) if size else \
        m0test.request(server.port, "POST", "/", headers={"Content-Length": "0"})
    assert r.status == 200
    assert r.body == body
    assert r.header("x-echo") == "1"
    assert r.header("Content-Length") == str(size)


def test_body_echo_with_chunked_request(m0_server):
    server = m0_server(asgi_config("asgi_apps:echo"))
    with server.connect() as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n")
        r = m0test.ResponseReader(s).read()
    assert r.status == 200
    assert r.body == b"hello world"


def test_receive_after_the_response_says_disconnect(m0_server):
    # The echo app asserts http.disconnect after its response; a failed
    # assertion would be logged as an error.
    server = m0_server(asgi_config("asgi_apps:echo"))
    for _ in range(3):
        assert m0test.request(server.port, "POST", "/", body=b"x").status == 200
    assert m0test.request(server.port, "GET", "/").status == 200
    assert "Traceback" not in server.output()


def test_keep_alive_serves_many_requests(m0_server):
    server = m0_server(asgi_config("asgi_apps:echo"))
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for i in range(20):
            body = b"n%d" % i
            s.sendall(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            assert reader.read().body == body


def test_streamed_response_is_chunked(m0_server):
    server = m0_server(asgi_config("asgi_apps:stream"))
    r = m0test.request(server.port, "GET", "/?n=50&size=3000")
    assert r.status == 200
    assert r.header("Transfer-Encoding") == "chunked"
    assert r.header("Content-Length") is None
    assert r.body == b"".join((b"%d" % (i % 10)) * 3000 for i in range(50))


def test_large_stream_with_a_slow_reader_arrives_whole(m0_server):
    # Far more than send_buffer: send() must wait for room and resume.
    server = m0_server(asgi_config("asgi_apps:stream"))
    with server.connect() as s:
        s.sendall(b"GET /?n=400&size=16384 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        raw = m0test.recv_until_closed(s, timeout=30)
    assert raw.startswith(b"HTTP/1.1 200")
    assert raw.endswith(b"0\r\n\r\n")
    assert raw.count(b"9" * 16384) == 40


def test_exception_before_start_is_500_with_traceback_in_log(m0_server):
    server = m0_server(asgi_config("asgi_apps:raise_before_start"))
    r = m0test.request(server.port, "GET", "/")
    assert r.status == 500
    assert b"boom" not in r.body and b"Traceback" not in r.body
    assert wait_for_log(server, "ValueError: boom before start")
    assert "Traceback (most recent call last)" in server.output()
    assert "asgi_apps:raise_before_start" in server.output()
    assert m0test.request(server.port, "GET", "/").status == 500  # still serving


def test_exception_after_start_aborts_the_connection(m0_server):
    server = m0_server(asgi_config("asgi_apps:raise_after_start"))
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        raw = m0test.recv_until_closed(s)
    assert raw.startswith(b"HTTP/1.1 200")
    assert b"partial" in raw
    assert not raw.endswith(b"0\r\n\r\n")  # never a response that looks complete
    assert wait_for_log(server, "ValueError: boom after start")


@pytest.mark.parametrize("app,logged", [
    ("no_response", "returned without sending http.response.start"),
    ("wrong_message", "http.response.body sent before http.response.start"),
])
def test_app_errors_are_500_and_logged_with_the_app_name(m0_server, app, logged):
    server = m0_server(asgi_config(f"asgi_apps:{app}"))
    r = m0test.request(server.port, "GET", "/")
    assert r.status == 500
    assert wait_for_log(server, logged)
    assert f"asgi: asgi_apps:{app}" in server.output()


def test_websocket_upgrade_to_an_http_only_app_is_500(m0_server):
    # The app gets the websocket scope (test_websocket.py); one that does not
    # handle it fails before accepting, which answers 500, never a hang.
    server = m0_server(asgi_config("asgi_apps:echo"))
    r = m0test.request(server.port, "GET", "/ws", headers={
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert r.status == 500


def test_lifespan_state_reaches_every_scope_and_shutdown_runs(m0_server):
    server = m0_server(asgi_config("asgi_apps:lifespan_app", frontend_extra="  lifespan: on\n"))
    for _ in range(3):
        r = m0test.request(server.port, "GET", "/")
        assert r.status == 200
        assert json.loads(r.body) == {"state": {"resource": "opened"}}
    assert server.stop() == 0
    assert "lifespan shutdown ran" in server.output()


def test_the_lifespan_scope_names_the_lifespan_spec_version(m0_server):
    # The lifespan spec is versioned apart from the HTTP one (its latest is
    # 2.0): an http scope's "2.5" there would name a version that never was.
    server = m0_server(asgi_config("asgi_apps:lifespan_scope", frontend_extra="  lifespan: on\n"))
    r = m0test.request(server.port, "GET", "/")
    assert (r.status, json.loads(r.body)) == (200, {"version": "3.0", "spec_version": "2.0"})


def test_lifespan_startup_failed_exits_1_with_the_message():
    p = run_to_exit(asgi_config("asgi_apps:lifespan_failing"))
    assert p.returncode == 1, p.stderr
    assert "lifespan startup failed: no database" in p.stderr + p.stdout


def test_lifespan_unsupported_in_auto_is_served(m0_server):
    server = m0_server(asgi_config("asgi_apps:scope_echo"))
    assert m0test.request(server.port, "GET", "/").status == 200
    assert wait_for_log(server, "does not support the lifespan protocol")
    assert server.output().count("does not support the lifespan protocol") == 1


def test_lifespan_on_with_an_app_that_raises_exits_1():
    p = run_to_exit(asgi_config("asgi_apps:scope_echo", frontend_extra="  lifespan: on\n"))
    assert p.returncode == 1
    assert "RuntimeError: no lifespan here" in p.stderr + p.stdout


def test_lifespan_off_never_calls_it(m0_server):
    server = m0_server(asgi_config("asgi_apps:scope_echo", frontend_extra="  lifespan: off\n"))
    assert m0test.request(server.port, "GET", "/").status == 200
    assert "lifespan" not in server.output()


@pytest.mark.parametrize("executor", ["pool", "inline"])
def test_refused_on_a_blocking_executor(executor):
    p = run_to_exit(asgi_config("asgi_apps:echo", executor=executor))
    assert p.returncode == 1
    assert "executor.type: asyncio" in p.stderr + p.stdout


def test_two_loops_serve_two_reactors(m0_server):
    server = m0_server(asgi_config("asgi_apps:lifespan_app", extra="  asyncio:\n    loops: 2\n"), threads=2)
    for _ in range(10):
        r = m0test.request(server.port, "GET", "/")
        assert json.loads(r.body) == {"state": {"resource": "opened"}}
    assert server.stop() == 0
    assert server.output().count("lifespan shutdown ran") == 2


@pytest.mark.parametrize("app,interface", [
    ("asgi_apps:lifespan_app", "asgi"),  # an object whose __call__ is a coroutine function
    ("asgi_apps:echo", "asgi"),          # a coroutine function
    ("asgi_apps:wsgi_app", "wsgi"),
])
def test_app_shortcut_detects_the_interface(m0_server, app, interface):
    server = m0_server(None, "--app", app, cwd=APPS)
    assert m0test.request(server.port, "GET", "/").status == 200
    assert f"serving it as {interface} (--interface auto)" in server.output()
    assert f"frontend {interface}" in server.output()


def test_app_shortcut_with_an_explicit_interface(m0_server):
    server = m0_server(None, "--app", "asgi_apps:echo", "--interface", "asgi", cwd=APPS)
    assert m0test.request(server.port, "POST", "/", body=b"hi").body == b"hi"
    assert "--interface auto" not in server.output()


def test_app_shortcut_rejects_an_unknown_interface():
    p = m0test.run_m0("--app", "asgi_apps:echo", "--interface", "rsgi", cwd=APPS)
    assert p.returncode == 2
    assert "--interface must be auto, wsgi or asgi" in p.stderr


def _has(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


def test_starlette_app(m0_server):
    # The embedded interpreter uses the test venv (sys.prefix), which carries
    # Starlette when tests/requirements.txt is installed.
    if not _has("starlette"):
        pytest.skip("starlette is not installed in the test venv")
    import sys
    server = m0_server(asgi_config("starlette_app:app", extra="") + f"python:\n  venv: {sys.prefix}\n")
    r = m0test.request(server.port, "GET", "/")
    assert (r.status, r.body) == (200, b"hello from lifespan")
    r = m0test.request(server.port, "POST", "/items/7?q=x", headers={"Content-Type": "application/json"},
                       body=b'{"a": [1, 2]}')
    assert r.status == 200
    assert json.loads(r.body) == {"id": 7, "got": {"a": [1, 2]}, "q": "x"}
    r = m0test.request(server.port, "GET", "/numbers")
    assert r.header("Transfer-Encoding") == "chunked"
    assert r.body == "".join(f"{i}\n" for i in range(100)).encode()
    assert m0test.request(server.port, "GET", "/missing").status == 404
    assert server.stop() == 0
    assert "starlette lifespan closed" in server.output()


def test_uvloop_loop(m0_server):
    if not _has("uvloop"):
        pytest.skip("uvloop is not installed in the test venv")
    import sys
    server = m0_server(asgi_config("asgi_apps:stream", extra="  asyncio:\n    loop: uvloop\n")
                       + f"python:\n  venv: {sys.prefix}\n")
    r = m0test.request(server.port, "GET", "/?n=200&size=1000")
    assert r.body == b"".join((b"%d" % (i % 10)) * 1000 for i in range(200))
    assert server.stop() == 0


def test_prefork_runs_the_lifespan_in_every_process(m0_server):
    server = m0_server(asgi_config("asgi_apps:lifespan_app"), "--workers", "2")
    for _ in range(10):
        r = m0test.request(server.port, "GET", "/")
        assert json.loads(r.body) == {"state": {"resource": "opened"}}
    assert server.stop() == 0
    assert server.output().count("lifespan shutdown ran") == 2


def test_pathsend_sends_the_file(m0_server):
    server = m0_server(asgi_config("asgi_apps:pathsend"))
    with open(os.path.join(APPS, "asgi_apps.py"), "rb") as f:
        expected = f.read()
    r = m0test.request(server.port, "GET", "/")
    assert r.status == 200
    assert r.header("Content-Length") == str(len(expected))
    assert r.body == expected
    # A file that cannot be opened, after the start: the connection is cut.
    with server.connect() as s:
        s.sendall(b"GET /?missing HTTP/1.1\r\nHost: h\r\n\r\n")
        assert m0test.recv_until_closed(s) == b""
    assert wait_for_log(server, "FileNotFoundError")


def test_asgi_mounts_share_a_loop_beside_a_native_mount(m0_server):
    server = m0_server(
        "executors:\n"
        "  loop:\n"
        "    type: asyncio\n"
        "mounts:\n"
        "  - prefix: /health\n"
        "    frontend:\n"
        "      type: http\n"
        "      routes:\n"
        "        - {path: /health, body: ok}\n"
        "  - prefix: /api\n"
        "    executor: loop\n"
        "    frontend:\n"
        "      type: asgi\n"
        "      app: \"asgi_apps:lifespan_app\"\n"
        f"      chdir: {APPS}\n"
        "  - prefix: /echo\n"
        "    executor: loop\n"
        "    frontend:\n"
        "      type: asgi\n"
        "      app: \"asgi_apps:scope_echo\"\n"
        f"      chdir: {APPS}\n")
    assert m0test.request(server.port, "GET", "/health").body == b"ok"
    assert json.loads(m0test.request(server.port, "GET", "/api/x").body) == {"state": {"resource": "opened"}}
    scope = json.loads(m0test.request(server.port, "GET", "/echo/a%20b").body)
    assert (scope["root_path"], scope["path"], unbytes(scope["raw_path"])) == ("/echo", "/echo/a b", b"/echo/a%20b")
    assert scope["state"] == {}  # the other mount's lifespan state is its own
    assert server.stop() == 0
    assert "lifespan shutdown ran" in server.output()


@pytest.mark.parametrize("path,outcome,logged", [
    ("/unknown-type", 500, "unexpected ASGI message type 'http.response.bogus'"),
    ("/status-not-int", 500, "status must be an int"),
    ("/header-with-newline", 500, "has CR, LF or NUL in its value"),
    ("/start-twice", "abort", "http.response.start sent twice"),
    ("/return-mid-stream", "abort", "returned before the response was complete"),
    ("/body-not-bytes", "abort", "http.response.body body must be bytes"),
    ("/body-after-end", "complete", "http.response.body sent after the response body was complete"),
])
def test_protocol_errors_are_logged_with_the_app_name(m0_server, path, outcome, logged):
    # Before http.response.start: 500. After it: the connection is cut, so
    # the client never takes a partial response for a whole one. After the
    # response was complete: it stays as sent, and the stray message is logged.
    server = m0_server(asgi_config("asgi_apps:misbehave"))
    with server.connect() as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n".encode())
        raw = m0test.recv_until_closed(s)
    if outcome == 500:
        assert raw.startswith(b"HTTP/1.1 500"), raw
    elif outcome == "abort":
        assert not raw.endswith(b"0\r\n\r\n"), raw
        assert b"Content-Length" not in raw
    else:
        assert raw.startswith(b"HTTP/1.1 200") and raw.endswith(b"\r\n\r\ncomplete"), raw
    server.wait_for_log(logged)
    assert "asgi: asgi_apps:misbehave" in server.output()


def test_input_buffer_below_4k_is_a_located_config_error():
    p = run_to_exit(asgi_config("asgi_apps:echo", frontend_extra="  input_buffer: 1k\n"))
    assert p.returncode == 2, p.stderr
    assert "frontend.input_buffer" in p.stderr and "must be at least 4k" in p.stderr, p.stderr
