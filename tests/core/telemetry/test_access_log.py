"""The access log (log.access): off by default; gunicorn's format, custom
atoms and JSON lines; one line per response of every kind (a native route, a
static file, a WSGI app, an ASGI app, a request rejected by the parser);
written to a file that SIGUSR1 reopens after logrotate renamed it."""
import json
import os
import re
import signal
import sys

import pytest

import m0test

PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
VENV = {"VIRTUAL_ENV": sys.prefix}
UA = "m0-test-agent/1.0"

needs_wsgi = pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-frontend-wsgi.so")),
                                reason="the frontend-wsgi plugin is not built")
needs_asgi = pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-frontend-asgi.so")),
                                reason="the frontend-asgi plugin is not built")

NATIVE = """
frontend:
  type: http
  routes:
    - {path: /hello, body: "Hello, World!", headers: {Content-Type: text/plain, X-Route: hello}}
  static: {prefix: /files, root: %(root)s}
log:
%(log)s
"""

# gunicorn's default format, with m0's UTC time.
GUNICORN_LINE = re.compile(r'^(\S+) - - \[(\d\d/\w\w\w/\d{4}:\d\d:\d\d:\d\d \+0000)\] "([^"]*)" (\d{3}) (\S+) "([^"]*)" "([^"]*)"$')


def native_config(tmp_path, log):
    root = tmp_path / "www"
    root.mkdir(exist_ok=True)
    (root / "a.txt").write_bytes(b"0123456789")
    return NATIVE % {"root": root, "log": log}


def access_lines(text, pattern=GUNICORN_LINE):
    return [m for m in (pattern.match(line) for line in text.splitlines()) if m]


def get(server, path, headers=None):
    return m0test.request(server.port, path=path, headers=dict({"User-Agent": UA}, **(headers or {})))


def stopped(server):
    """Stops m0 (SIGTERM): at exit every buffered line has been written."""
    assert server.stop() == 0
    return server.output()


def test_off_by_default_nothing_is_logged(tmp_path, m0_server):
    server = m0_server(native_config(tmp_path, "  level: info"))
    assert get(server, "/hello").status == 200
    assert get(server, "/files/a.txt").status == 200
    out = stopped(server)
    assert "GET /hello" not in out and "/files/a.txt" not in out, out


def test_gunicorn_default_format_for_routes_static_files_and_rejections(tmp_path, m0_server):
    server = m0_server(native_config(tmp_path, "  access: true"))
    assert get(server, "/hello", {"Referer": "http://example.test/from"}).status == 200
    assert get(server, "/files/a.txt").status == 200
    assert get(server, "/missing").status == 404
    head = m0test.request(server.port, method="HEAD", path="/hello")
    assert head.status == 200
    # A request the parser refuses (no request target) is logged too.
    with server.connect() as sock:
        sock.sendall(b"BROKEN\r\n\r\n")
        assert b" 400 " in m0test.recv_until_closed(sock)
    lines = access_lines(stopped(server))
    by_request = {m.group(3): m for m in lines}
    assert set(by_request) == {"GET /hello HTTP/1.1", "GET /files/a.txt HTTP/1.1", "GET /missing HTTP/1.1",
                               "HEAD /hello HTTP/1.1", "-"}, lines
    hello = by_request["GET /hello HTTP/1.1"]
    assert hello.group(1) == "127.0.0.1"
    assert (hello.group(4), hello.group(5), hello.group(6), hello.group(7)) == \
        ("200", "13", "http://example.test/from", UA)
    static = by_request["GET /files/a.txt HTTP/1.1"]
    assert (static.group(4), static.group(5), static.group(6)) == ("200", "10", "-")
    assert by_request["GET /missing HTTP/1.1"].group(4) == "404"
    # No body for HEAD: %(b)s is "-" as in gunicorn.
    assert by_request["HEAD /hello HTTP/1.1"].group(4, 5) == ("200", "-")
    assert by_request["-"].group(4) == "400"


def test_custom_atoms_request_and_response_headers(tmp_path, m0_server):
    fmt = '%(m)s|%(U)s|%(q)s|%(H)s|%(s)s|%(B)s|%({x-request-id}i)s|%({x-route}o)s|%(D)s|%(p)s|100%%'
    server = m0_server(native_config(tmp_path, f"  access: '{fmt}'"))
    assert get(server, "/hello?a=1&b=2", {"X-Request-Id": "abc-123"}).status == 200
    assert get(server, "/missing").status == 404
    out = stopped(server)
    pattern = re.compile(r"^(GET)\|(/\S*)\|(\S*)\|(HTTP/1\.1)\|(\d+)\|(\d+)\|(\S+)\|(\S+)\|(\d+)\|(\d+)\|100%$")
    lines = access_lines(out, pattern)
    assert len(lines) == 2, out
    hello, missing = sorted(lines, key=lambda m: m.group(2))
    assert hello.groups()[:8] == ("GET", "/hello", "a=1&b=2", "HTTP/1.1", "200", "13", "abc-123", "hello")
    assert int(hello.group(10)) == server.proc.pid
    # Absent values are "-"; %(B)s is a number even for an empty body.
    assert missing.groups()[:8] == ("GET", "/missing", "-", "HTTP/1.1", "404", missing.group(6), "-", "-")


def test_request_controlled_text_cannot_forge_a_line(tmp_path, m0_server):
    server = m0_server(native_config(tmp_path, "  access: true"))
    assert get(server, "/hello", {"User-Agent": 'evil" 200 "x\\y'}).status == 200
    lines = access_lines(stopped(server))
    assert len(lines) == 1
    assert lines[0].group(7) == r"evil\x22 200 \x22x\x5cy"


def test_json_lines_parse_with_documented_keys(tmp_path, m0_server):
    log_file = tmp_path / "access.jsonl"
    server = m0_server(native_config(tmp_path, f"  access: true\n  access_format: json\n  access_file: {log_file}"))
    assert get(server, "/hello?x=%C3%A9", {"Referer": "r\u00e9f".encode().decode("latin-1")}).status == 200
    assert get(server, "/files/a.txt").status == 200
    stopped(server)
    records = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert len(records) == 2
    hello, static = sorted(records, key=lambda r: r["path"])[::-1]
    assert set(hello) == {"time", "remote_addr", "remote_port", "method", "target", "path", "query", "protocol",
                          "status", "bytes", "duration_us", "referer", "user_agent", "mount", "outcome", "pid",
                          "reactor"}
    assert hello["outcome"] == "ok"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", hello["time"])
    assert (hello["method"], hello["target"], hello["path"], hello["query"], hello["protocol"]) == \
        ("GET", "/hello?x=%C3%A9", "/hello", "x=%C3%A9", "HTTP/1.1")
    assert (hello["status"], hello["bytes"], hello["user_agent"], hello["mount"]) == (200, 13, UA, "/")
    # Bytes outside ASCII are escaped, each as its Latin-1 code point.
    assert hello["referer"] == "r\u00c3\u00a9f"
    assert hello["remote_addr"] == "127.0.0.1" and hello["pid"] == server.proc.pid
    assert isinstance(hello["duration_us"], int) and hello["duration_us"] >= 0
    assert (static["status"], static["bytes"]) == (200, 10)


@needs_wsgi
@needs_asgi
def test_wsgi_and_asgi_mounts_are_logged_with_status_and_bytes(tmp_path, m0_server):
    log_file = tmp_path / "access.jsonl"
    config = f"""
executors:
  loop: {{type: asyncio}}
  pool: {{type: pool}}
mounts:
  - prefix: /wsgi
    frontend: {{type: wsgi, app: "log_apps:wsgi_app", chdir: {APPS}}}
    executor: pool
  - prefix: /asgi
    frontend: {{type: asgi, app: "log_apps:asgi_app", chdir: {APPS}}}
    executor: loop
  - prefix: /
    frontend: {{type: http, routes: [{{path: /hello, body: "Hello, World!"}}]}}
log:
  access: true
  access_format: json
  access_file: {log_file}
"""
    server = m0_server(config, env=VENV)
    for path in ("/wsgi/x", "/asgi/y", "/hello"):
        assert get(server, path).status in (200, 201)
    stopped(server)
    records = {r["path"]: r for r in map(json.loads, log_file.read_text().splitlines())}
    assert (records["/wsgi/x"]["status"], records["/wsgi/x"]["bytes"], records["/wsgi/x"]["mount"]) == (201, 5, "/wsgi")
    assert (records["/asgi/y"]["status"], records["/asgi/y"]["bytes"], records["/asgi/y"]["mount"]) == (201, 5, "/asgi")
    assert (records["/hello"]["status"], records["/hello"]["bytes"], records["/hello"]["mount"]) == (200, 13, "/")


def test_sigusr1_reopens_the_file_after_a_rename(tmp_path, m0_server):
    log_file = tmp_path / "access.log"
    rotated = tmp_path / "access.log.1"
    server = m0_server(native_config(tmp_path, f"  access: true\n  access_file: {log_file}"))
    assert get(server, "/hello?before").status == 200
    # Lines are flushed by time as well as by size: wait for it to arrive.
    server.wait_until(lambda: log_file.exists() and "/hello?before" in log_file.read_text(),
                      what="the first line in the access log")
    os.rename(log_file, rotated)
    server.send_signal(signal.SIGUSR1)
    server.wait_for_log(f"access log: reopened {log_file}")
    assert get(server, "/hello?after").status == 200
    server.wait_until(lambda: log_file.exists() and "/hello?after" in log_file.read_text(),
                      what="the second line in the new file")
    assert "/hello?after" not in rotated.read_text()
    assert "/hello?before" not in log_file.read_text()
    # SIGUSR1 is not a stop signal: m0 keeps serving.
    assert get(server, "/hello").status == 200
    assert server.proc.poll() is None


def test_a_bad_format_is_refused_at_its_node(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(native_config(tmp_path, '  access: "%(h)s %(zz)s"'))
    result = m0test.run_m0("--config", str(path), "--check")
    assert result.returncode == 2
    assert re.search(r"m0\.yaml:\d+:\d+: log\.access: unknown atom '%\(zz\)s'", result.stderr), result.stderr


def test_the_supervisor_passes_sigusr1_to_every_worker_process(tmp_path, m0_server):
    log_file = tmp_path / "access.log"
    rotated = tmp_path / "access.log.1"
    server = m0_server(native_config(tmp_path, f"  access: true\n  access_file: {log_file}"), "--workers", "2")
    assert get(server, "/hello?before").status == 200
    server.wait_until(lambda: log_file.exists() and "/hello?before" in log_file.read_text(),
                      what="the first line in the access log")
    os.rename(log_file, rotated)
    server.send_signal(signal.SIGUSR1)
    server.wait_for_log(f"access log: reopened {log_file}", count=2)
    for i in range(10):
        assert get(server, f"/hello?after{i}").status == 200
    server.wait_until(lambda: log_file.exists() and log_file.read_text().count("/hello?after") == 10,
                      what="every later line in the new file")
    assert "/hello?after" not in rotated.read_text()
    assert server.proc.poll() is None
