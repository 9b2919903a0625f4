"""mounts: several frontends under one listener, picked by the longest path
prefix: configs/hybrid.yaml (static files, a native route, the Flask
example on a pool and the FastAPI example on an asyncio loop), SCRIPT_NAME / PATH_INFO under a mount, and deployments
written with the single frontend: key still accepted."""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.parse

import pytest

import m0test

PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
WSGI_PLUGIN = os.path.join(PLUGINS, "m0-frontend-wsgi.so")
POOL_PLUGIN = os.path.join(PLUGINS, "m0-executor-pool.so")
PYTHON_PLUGINS = [WSGI_PLUGIN, POOL_PLUGIN, os.path.join(PLUGINS, "m0-frontend-asgi.so"),
                  os.path.join(PLUGINS, "m0-executor-asyncio.so")]
CONFIGS = os.path.join(m0test.SOURCE_DIR, "configs")
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
# The embedded interpreter runs in the test venv (Flask is installed there).
VENV = {"VIRTUAL_ENV": sys.prefix}

needs_python = pytest.mark.skipif(not all(map(os.path.exists, PYTHON_PLUGINS)),
                                  reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")


class Running:
    """An m0 started on 127.0.0.1:0; the port is read from its "listening on"
    line, and its output is collected until it exits. With worker processes
    the supervisor and each process print one: `listening_lines` waits for
    all of them."""

    def __init__(self, config_path, *args, listening_lines=1):
        cmd = [m0test.M0_BINARY, "--config", config_path, "--listen", "127.0.0.1:0", "--threads", "2", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=dict(os.environ, **VENV), cwd=m0test.SOURCE_DIR, start_new_session=True)
        self.lines = []
        self.port = None
        seen = 0
        for line in self.proc.stdout:
            self.lines.append(line)
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if found:
                self.port = int(found.group(1))
                seen += 1
                if seen == listening_lines:
                    break
        if seen < listening_lines:
            self.proc.wait()
            raise RuntimeError(f"m0 exited with {self.proc.returncode} before listening:\n{self.output()}")
        # Keep the pipe drained so m0 never blocks on its log.
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self.reader.start()

    def output(self):
        return "".join(self.lines)

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def get(self, path, headers=None):
        return self.request("GET", path, headers=headers)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.reader.join(timeout=10)
        return code

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def start_m0():
    started = []

    def start(config_path, *args, **kwargs):
        server = Running(config_path, *args, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


@pytest.fixture
def yaml_file():
    """Writes YAML text to a file that lives for the test; returns its path."""
    paths = []

    def write(text):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(text)
        paths.append(f.name)
        return f.name

    yield write
    for path in paths:
        os.unlink(path)


@pytest.fixture(scope="module")
def hybrid():
    if not all(map(os.path.exists, PYTHON_PLUGINS)):
        pytest.skip("the Python plugins are not built (M0_BUILD_PYTHON=OFF)")
    server = Running(os.path.join(CONFIGS, "hybrid.yaml"))
    yield server
    try:
        assert server.stop() == 0, server.output()
    finally:
        server.kill()


def test_hybrid_serves_static_files_on_their_mount(hybrid):
    status, headers, body = hybrid.get("/static/")
    assert status == 200, body
    with open(os.path.join(m0test.SOURCE_DIR, "examples", "static-site", "index.html"), "rb") as f:
        assert body == f.read()
    status, headers, body = hybrid.get("/static/css/site.css")
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")


def test_hybrid_serves_the_native_route_on_its_mount(hybrid):
    assert hybrid.get("/health")[::2] == (200, b"ok")


def test_hybrid_flask_links_carry_the_mount_prefix(hybrid):
    status, _, body = hybrid.get("/flask/")
    assert status == 200, body
    page = body.decode()
    for link in ('href="/flask/form"', 'href="/flask/api/notes"', 'href="/flask/static/site.css"'):
        assert link in page, page
    # Each link leads somewhere: the JSON view and Flask's own static file.
    status, _, body = hybrid.get("/flask/api/notes")
    assert status == 200 and json.loads(body)["count"] == 2
    assert hybrid.get("/flask/static/site.css")[0] == 200


def test_hybrid_flask_form_posts_through_the_mount(hybrid):
    status, headers, body = hybrid.get("/flask/form")
    assert status == 200, body
    page = body.decode()
    assert 'action="/flask/form"' in page, page
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    cookie = headers["Set-Cookie"].split(";", 1)[0]
    form = urllib.parse.urlencode({"csrf_token": token, "text": "mounted"})
    status, _, body = hybrid.request("POST", "/flask/form", body=form,
                                     headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie})
    assert status == 200, body
    assert b"Thanks, you wrote: mounted" in body


@pytest.mark.parametrize("path", ["/", "/flaskx", "/staticfile", "/healthz", "/favicon.ico"])
def test_hybrid_paths_under_no_mount_get_404(hybrid, path):
    assert hybrid.get(path)[0] == 404


def test_hybrid_fastapi_runs_under_its_mount(hybrid):
    # The lifespan ran on the loop (the store is open) and root_path is the
    # mount: FastAPI routes /api/... to its own /... .
    status, _, body = hybrid.get("/api/")
    assert status == 200, body
    assert json.loads(body) == {"service": "notes", "store_open": True, "notes": 0}
    status, _, body = hybrid.request("POST", "/api/notes", body=json.dumps({"text": "mounted"}),
                                     headers={"Content-Type": "application/json"})
    assert (status, json.loads(body)) == (201, {"id": 1, "text": "mounted"}), body
    assert json.loads(hybrid.get("/api/notes")[2]) == {"notes": ["mounted"]}
    status, headers, body = hybrid.get("/api/count?to=5")
    assert (status, headers.get("Transfer-Encoding"), body) == (200, "chunked", b"1\n2\n3\n4\n5\n")
    assert hybrid.get("/api/missing")[0] == 404


def test_hybrid_flask_and_fastapi_run_at_once_on_their_own_executors(hybrid):
    # Flask's views run on pool threads and FastAPI's on the loop thread:
    # both executors are there, and requests to both mounts interleave.
    names = m0test.thread_affinities(hybrid.proc.pid)
    assert any(n.startswith("m0-pool-") for n in names), names
    assert "m0-asyncio-0" in names, names
    results = []

    def client(path):
        for _ in range(10):
            results.append(hybrid.get(path)[0])
    threads = [threading.Thread(target=client, args=(p,)) for p in ("/flask/api/notes", "/api/", "/static/")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 30


def test_hybrid_start_up_line_names_the_mounts(hybrid):
    assert "mounts /static=http /health=http /flask=wsgi /api=asgi" in hybrid.output()


@needs_python
def test_hybrid_under_two_worker_processes(start_m0):
    # Each serving process builds its own executors for the mounts.
    server = start_m0(os.path.join(CONFIGS, "hybrid.yaml"), "--set", "server.workers=2", listening_lines=3)
    for _ in range(4):  # fresh connections, spread over both processes
        assert server.get("/health")[::2] == (200, b"ok")
        status, _, body = server.get("/flask/")
        assert status == 200 and b'href="/flask/form"' in body
        status, _, body = server.get("/api/")
        assert status == 200 and json.loads(body)["store_open"] is True, body
    assert server.stop() == 0, server.output()
    # The FastAPI lifespan ran (and ended) in each serving process.
    assert server.output().count("fastapi example: store closed") == 2, server.output()


def route(path, body):
    return f"        - {{path: {path}, body: {body}}}\n"


def test_the_longest_matching_prefix_wins(start_m0, yaml_file):
    # The http frontend matches its routes on the full path, so the same
    # route in two mounts tells which mount answered.
    config = yaml_file(
        "mounts:\n"
        "  - prefix: /api\n"
        "    frontend:\n"
        "      type: http\n"
        "      routes:\n" + route("/api/v2/x", "api") + route("/api", "api-root") +
        "  - prefix: /api/v2\n"
        "    frontend:\n"
        "      type: http\n"
        "      routes:\n" + route("/api/v2/x", "v2") +
        "  - prefix: /\n"
        "    frontend:\n"
        "      type: http\n"
        "      routes:\n" + route("/apix", "root") + route("/api/v2/x", "root"))
    server = start_m0(config)
    assert server.get("/api/v2/x")[::2] == (200, b"v2")
    assert server.get("/api")[::2] == (200, b"api-root")
    assert server.get("/apix")[::2] == (200, b"root")
    # Under /api/v2 but not one of its routes: that mount's 404, not /api's route.
    assert server.get("/api/v2")[0] == 404
    assert server.stop() == 0


@needs_python
def test_wsgi_under_a_mount_gets_script_name_and_path_info(start_m0, yaml_file):
    config = yaml_file(
        "executors:\n"
        "  app: {type: pool, pool: {threads: 2}}\n"
        "mounts:\n"
        "  - prefix: /py\n"
        "    frontend: {type: wsgi, app: 'script_name_app:app', chdir: " + APPS + "}\n"
        "    executor: app\n"
        "  - prefix: /py/deep/\n"
        "    frontend: {type: wsgi, app: 'script_name_app:app', chdir: " + APPS + ", url_prefix: /inner}\n"
        "    executor: app\n"
        "  - prefix: /\n"
        "    frontend: {type: wsgi, app: 'script_name_app:app', chdir: " + APPS + "}\n")
    server = start_m0(config)

    def environ(path):
        status, _, body = server.get(path)
        assert status == 200, body
        found = json.loads(body)
        return found["script_name"], found["path_info"]

    assert environ("/py") == ("/py", "")
    assert environ("/py/") == ("/py", "/")
    assert environ("/py/a%20b?x=1") == ("/py", "/a b")
    assert environ("/pyx") == ("", "/pyx")
    assert environ("/") == ("", "/")
    # A mount's own url_prefix continues the mount's prefix.
    assert environ("/py/deep/inner/x") == ("/py/deep/inner", "/x")
    assert server.get("/py/deep/other")[0] == 404
    # A body over the WSGI input buffer (its handler streams it) reaches the mounted app.
    big = b"x" * (4 << 20)
    status, _, body = server.request("POST", "/py/upload", body=big)
    assert status == 200, body
    assert json.loads(body)["received"] == len(big)
    assert server.stop() == 0
    # Two pool-run mounts share the named executor; the root mount got its own.
    assert "executors app=pool /=pool" in server.output()


def test_a_deployment_with_frontend_and_mounts_is_refused(yaml_file):
    config = yaml_file("frontend: {type: http}\nmounts: [{prefix: /, frontend: {type: http}}]\n")
    result = m0test.run_m0("--config", config, "--check")
    assert result.returncode == 2
    assert "mounts: 'mounts' and 'frontend' cannot both be set" in result.stderr


@pytest.mark.parametrize("name", ["hello.yaml", "static.yaml", "flask.yaml", "hybrid.yaml"])
def test_shipped_configs_pass_check(name):
    if name in ("flask.yaml", "hybrid.yaml") and not os.path.exists(WSGI_PLUGIN):
        pytest.skip("the frontend-wsgi plugin is not built")
    result = m0test.run_m0("--config", os.path.join(CONFIGS, name), "--check", env=VENV)
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stderr
