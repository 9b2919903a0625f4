"""Unix sockets (issue 45): `--uds PATH`, `-b unix:PATH`, `unix:PATH` in
server.listen, for the native, WSGI and ASGI frontends, with one process and
under the supervisor (also across a SIGHUP reload): the socket file gets its
mode, is removed at exit, replaces a stale file a crash left, and is refused
when a live process listens there. A client on it has no address: WSGI's
REMOTE_ADDR is empty, ASGI's client None, the access log says "unix:"."""
import http.client
import json
import os
import signal
import socket
import stat
import sys

import pytest

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
HTTP_APPS = os.path.join(os.path.dirname(HERE), "http", "apps")  # client_apps.py
PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
needs_python = pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-frontend-wsgi.so")),
                                  reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")
ENV = {"VIRTUAL_ENV": sys.prefix}

HELLO = """
frontend:
  type: http
  routes:
    - path: /hello
      body: "Hello over a Unix socket"
"""


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=m0test.scaled(timeout))
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def get(path, target="/", headers=None):
    conn = UnixConnection(path)
    try:
        conn.request("GET", target, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.fixture
def sock_path(tmp_path):
    # A short path: sun_path holds 107 bytes.
    return str(tmp_path / "m0.sock")


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("scheduler", ["reactors", "balanced"])
def test_the_native_frontend_serves_on_a_unix_socket_removed_at_exit(sock_path, workers, scheduler):
    server = m0test.Server(HELLO, "-b", f"unix:{sock_path} mode=0660", "--workers", str(workers),
                           "--scheduler", scheduler, "--access-log", threads=2, env=ENV)
    try:
        server.start()
        server.wait_for_log(f"unix:{sock_path}")
        assert stat.S_ISSOCK(os.stat(sock_path).st_mode)
        assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o660
        assert get(sock_path, "/hello") == (200, b"Hello over a Unix socket")
        server.wait_for_log('unix: - - [')  # the access log's client
        # TCP beside it still serves.
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=m0test.scaled(10))
        conn.request("GET", "/hello")
        assert conn.getresponse().status == 200
        assert server.stop() == 0
    finally:
        assert server.finish() is None
    assert not os.path.exists(sock_path)


@needs_python
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("app", ["wsgi_app", "asgi_app"])
def test_python_apps_see_no_client_address(sock_path, workers, app):
    server = m0test.Server(None, f"client_apps:{app}", "--chdir", HTTP_APPS, "--uds", sock_path,
                           "--workers", str(workers), env=ENV)
    try:
        server.start()
        server.wait_for_log(f"unix:{sock_path}")
        status, body = get(sock_path)
        assert status == 200
        seen = json.loads(body)
        if app == "wsgi_app":
            assert seen["REMOTE_ADDR"] == "" and seen["REMOTE_PORT"] is None, seen
            assert seen["SERVER_NAME"] == "localhost" and seen["SERVER_PORT"] == "80", seen
        else:
            assert seen["client"] is None and seen["server"] is None, seen
    finally:
        assert server.finish() is None
    assert not os.path.exists(sock_path)


def test_a_stale_socket_file_is_replaced_and_a_live_one_refused(sock_path, tmp_path):
    # What a crash leaves: a socket file nothing listens on.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(sock_path)
    stale.close()
    config = tmp_path / "hello.yaml"
    config.write_text(HELLO)
    first = m0test.Server(str(config), "--uds", sock_path)
    try:
        first.start()
        first.wait_for_log(f"unix:{sock_path}")
        assert get(sock_path, "/hello")[0] == 200
        second = m0test.run_m0("--config", str(config), "--uds", sock_path, timeout=30)
        assert second.returncode == 1, second.stderr
        assert f"unix:{sock_path}" in second.stderr and "a running process listens there" in second.stderr
        # The first one's socket is untouched.
        assert get(sock_path, "/hello")[0] == 200
    finally:
        assert first.finish() is None
    plain = tmp_path / "not-a-socket"
    plain.write_text("data")
    out = m0test.run_m0("--config", str(config), "--uds", str(plain), timeout=30)
    assert out.returncode == 1 and "exists and is not a socket" in out.stderr, out.stderr
    assert plain.read_text() == "data"


def test_unix_in_server_listen_with_a_bad_option_is_a_config_error(tmp_path):
    config = tmp_path / "m0.yaml"
    config.write_text(HELLO + "server:\n  listen: ['unix:/run/m0.sock mode=999']\n")
    out = m0test.run_m0("--config", str(config), "--check")
    assert out.returncode == 2 and "mode=999 is not an octal file mode" in out.stderr, out.stderr
    config.write_text(HELLO + "server:\n  listen: ['unix:/run/m0.sock mode=0660 owner=root']\n")
    out = m0test.run_m0("--config", str(config), "--check")
    assert out.returncode == 0, out.stderr
    assert "unix:/run/m0.sock mode=0660 owner=root" in out.stdout


@pytest.mark.parametrize("mode", ["workers-2", "reload"])
def test_a_reload_keeps_the_unix_socket(sock_path, tmp_path, mode):
    args = ["--workers", "2"] if mode == "workers-2" else ["--reload", "--reload-dir", str(tmp_path)]
    server = m0test.Server(HELLO, "--uds", sock_path, *args)
    try:
        server.start()
        server.wait_for_log(f"unix:{sock_path}")
        server.send_signal(signal.SIGHUP)
        server.signalled.clear()  # SIGHUP is no stop signal
        server.wait_for_log("supervisor: reloaded")
        assert get(sock_path, "/hello") == (200, b"Hello over a Unix socket")
        assert os.path.exists(sock_path)
    finally:
        assert server.finish() is None
    assert not os.path.exists(sock_path)


@needs_python
@pytest.mark.parametrize("trusted", [None, "127.0.0.1"])
def test_behind_nginx_on_a_unix_socket_the_forwarded_client_is_trusted_by_default(sock_path, trusted):
    """nginx `proxy_pass http://unix:PATH` with X-Forwarded-For: its socket is
    a local peer, trusted by default as loopback is ("unix:" in
    server.forwarded_allow_ips); a list without "unix:" ignores the headers."""
    args = ["--set", f"server.forwarded_allow_ips=['{trusted}']"] if trusted else []
    server = m0test.Server(None, "client_apps:wsgi_app", "--chdir", HTTP_APPS, "--uds", sock_path, *args, env=ENV)
    try:
        server.start()
        server.wait_for_log(f"unix:{sock_path}")
        status, body = get(sock_path, headers={"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"})
        seen = json.loads(body)
        if trusted is None:
            assert seen["REMOTE_ADDR"] == "203.0.113.7" and seen["wsgi.url_scheme"] == "https", seen
        else:
            assert seen["REMOTE_ADDR"] == "" and seen["wsgi.url_scheme"] == "http", seen
    finally:
        assert server.finish() is None
