"""Application loading: module:callable, factory calls, python.path,
python.venv, chdir, and start-up failures that name their reason."""
import json
import os
import re

import pytest

import m0test
from conftest import APPS, POOL_PLUGIN, TEST_VENV, wsgi_config


def check(config_text, tmp_path, *args, env=None):
    path = tmp_path / "m0.yaml"
    path.write_text(config_text)
    return m0test.run_m0("--config", str(path), "--check", *args, timeout=60, env=env)


@pytest.mark.parametrize("app,reason", [
    ("no_such_module:app", "ModuleNotFoundError: No module named 'no_such_module'"),
    ("wsgi_apps:missing", "has no attribute 'missing'"),
    ("wsgi_apps:not_callable", "is not callable"),
    ("wsgi_apps:make_app(1, 2, 3)", "TypeError"),
    ("broken_app:app", "ZeroDivisionError"),
])
def test_bad_application_stops_startup(tmp_path, app, reason):
    (tmp_path / "broken_app.py").write_text("x = 1 / 0\n")
    cfg = wsgi_config(app, "inline", extra="") + f"python:\n  path: [{tmp_path}]\n"
    r = check(cfg, tmp_path)
    assert r.returncode == 2  # an application that cannot be loaded: nothing starts
    out = r.stdout + r.stderr
    assert reason in out, out
    # One line saying why, naming the app.
    assert any(app.split("(")[0] in line and reason.split(":")[0] in line for line in out.splitlines()), out
    if app.startswith("broken"):
        assert "Traceback (most recent call last)" in out


def test_missing_app_key_is_a_config_error(tmp_path):
    r = check("frontend:\n  type: wsgi\n", tmp_path)
    assert r.returncode == 2 and "frontend.app" in r.stderr


def test_unknown_key_is_refused(tmp_path):
    r = check(wsgi_config("wsgi_apps:hello", "inline", extra="  url_prefx: /x\n"), tmp_path)
    assert r.returncode == 2 and "url_prefx" in r.stderr and "url_prefix" in r.stderr


def test_bad_venv_is_refused(tmp_path):
    r = check(wsgi_config("wsgi_apps:hello", "inline") + f"python:\n  venv: {tmp_path}/nope\n", tmp_path)
    assert r.returncode == 2 and "python.venv" in r.stderr


def test_factory_call(wsgi_server):
    server = wsgi_server(app="wsgi_apps:make_app('made by factory')")
    assert m0test.request(server.port, path="/").body == b"made by factory"


def serve_module_app(m0_server, executor, tmp_path, module, source):
    """Serves `module`:app, written from `source` into tmp_path, which is
    put on python.path; the test venv from python.venv, not the environment."""
    (tmp_path / f"{module}.py").write_text(source)
    cfg = (f"frontend:\n  type: wsgi\n  app: {module}:app\n"
           f"python:\n  venv: {TEST_VENV}\n  path: [{tmp_path}]\n"
           f"executor:\n  type: {executor}\n")
    return m0_server(cfg, env={"VIRTUAL_ENV": ""})


def test_python_path_and_venv(m0_server, executor, tmp_path):
    server = serve_module_app(m0_server, executor, tmp_path, "pathapp",
                              "import flask\n"
                              "def app(environ, start_response):\n"
                              "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
                              "    return [flask.__name__.encode()]\n")
    assert m0test.request(server.port, path="/").body == b"flask"


def test_relative_chdir_resolves_against_the_config_file(m0_server, executor, tmp_path):
    app_dir = tmp_path / "site"
    app_dir.mkdir()
    (app_dir / "cwdapp.py").write_text(
        "import os\n"
        "def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [os.getcwd().encode()]\n")
    cfg_path = tmp_path / "m0.yaml"
    cfg_path.write_text(f"frontend:\n  type: wsgi\n  app: cwdapp:app\n  chdir: site\nexecutor:\n  type: {executor}\n")
    server = m0_server(str(cfg_path))
    assert m0test.request(server.port, path="/").body == str(app_dir).encode()


def test_static_files_are_served_natively(wsgi_server, tmp_path):
    (tmp_path / "css").mkdir()
    (tmp_path / "css" / "site.css").write_text("body { color: red }\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text("<p>docs</p>\n")
    server = wsgi_server(extra=f"  static:\n    - prefix: /assets/\n      root: {tmp_path}\n")
    r = m0test.request(server.port, path="/assets/css/site.css")
    assert r.status == 200 and r.body == b"body { color: red }\n"
    assert r.header("Content-Type").startswith("text/css")
    assert m0test.request(server.port, path="/assets/css/missing.css").status == 404
    assert m0test.request(server.port, path="/assets/%2e%2e/%2e%2e/etc/passwd").status == 404
    assert m0test.request(server.port, path="/assets/../../etc/passwd").status in (400, 404)
    assert m0test.request(server.port, method="POST", path="/assets/css/site.css", body=b"x").status == 405
    assert m0test.request(server.port, path="/hello").body == b"Hello, World!"
    # A directory answers with its index; without the slash it is redirected.
    assert m0test.request(server.port, path="/assets/docs/").body == b"<p>docs</p>\n"
    r = m0test.request(server.port, path="/assets/docs?x=1")
    assert r.status == 301 and r.header("Location") == "/assets/docs/?x=1"


def test_static_keys_are_those_of_the_http_frontend(tmp_path):
    r = check(wsgi_config("wsgi_apps:hello", "inline", extra=f"  static: {{root: {tmp_path}, indx: a.html}}\n"),
              tmp_path)
    assert r.returncode == 2 and "indx" in r.stderr and "index" in r.stderr
    r = check(wsgi_config("wsgi_apps:hello", "inline", extra=f"  static: {{root: {tmp_path}/nope}}\n"), tmp_path)
    assert r.returncode == 2 and "frontend.static.root" in r.stderr and "not a directory" in r.stderr


def test_app_shortcut_needs_no_config_file(m0_server):
    # README: `m0 --app module:callable` serves a WSGI app on 127.0.0.1:8000
    # with nothing else; the module is found from the working directory.
    r = m0test.run_m0("--app", "wsgi_apps:hello", "--check", cwd=APPS)
    assert r.returncode == 0, r.stderr
    assert "listen:\n    - 127.0.0.1:8000\n" in r.stdout
    assert "  type: wsgi\n  app: wsgi_apps:hello\n" in r.stdout
    # Served (on a port of m0's choosing instead of 8000, which may be taken).
    server = m0_server(None, "--app", "wsgi_apps:hello", cwd=APPS)
    assert m0test.request(server.port, path="/").body == b"Hello, World!"


@pytest.mark.parametrize("env,ring", [({}, "vyukov"), ({"M0_POOL_RING": "0"}, "none"),
                                      ({"M0_POOL_RING": "1"}, "vyukov")])
def test_check_prints_the_ring_that_runs(tmp_path, env, ring):
    cfg = wsgi_config("wsgi_apps:hello", "pool") + "  pool: {ring: vyukov}\n"
    r = check(cfg, tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    rings = re.findall(r"^ +ring: (\S+)$", r.stdout, re.MULTILINE)
    assert rings == [ring], r.stdout


@pytest.mark.parametrize("args,env", [
    (("--set", "executor.pool.reactor_spin=50us"), {}),
    ((), {"M0_POOL_RING": "0"}),  # the pool's off switch: ring `none`
], ids=["reactor_spin", "M0_POOL_RING=0"])
def test_pool_variants_serve(m0_server, args, env):
    # Not only parsed: requests on one connection, plain and streamed, and
    # several connections at once, through the pool's other hand-offs.
    assert os.path.exists(POOL_PLUGIN)
    server = m0_server(wsgi_config("wsgi_apps:validated", "pool"), *args, threads=2, env=env)
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for path in ("/hello", "/stream?n=5", "/hello"):
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
            r = reader.read()
            assert r.status == 200, (r.body, server.output())
        assert r.body == b"Hello, World!"
    connections = [server.connect() for _ in range(8)]
    for s in connections:
        s.sendall(b"GET /stream?n=3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    for s in connections:
        with s:
            assert m0test.ResponseReader(s).read().body == b"chunk0;chunk1;chunk2;"


def test_one_interpreter_serves_the_app_and_its_extension_modules(m0_server, executor, tmp_path):
    # The m0 binary carries CPython's static library (M0_PYTHON_STATIC,
    # libs/python-embed/README.md); the sanitizer builds link the shared
    # libpython3.11.so instead. Either way the process holds exactly one
    # interpreter, and C extension modules (lib-dynload's _decimal,
    # pydantic_core from the venv) find its symbols.
    version = m0test.run_m0("--version", timeout=60)
    linked_into_m0 = os.environ.get("M0_SANITIZE", "none") in ("", "none")
    assert ("libpython3.11.a linked into m0" in version.stdout) == linked_into_m0, version.stdout
    server = serve_module_app(m0_server, executor, tmp_path, "interpreter_app",
        "import decimal, json, os\n"
        "import pydantic\n"
        "def app(environ, start_response):\n"
        "    with open('/proc/self/maps') as f:\n"
        "        libpython = sorted({l.split()[-1] for l in f if 'libpython' in l})\n"
        "    body = json.dumps({'libpython': libpython, 'exe': os.path.realpath('/proc/self/exe'),\n"
        "                       'decimal': str(decimal.Decimal('1.1') + decimal.Decimal('2.2')),\n"
        "                       'pydantic': pydantic.TypeAdapter(int).validate_python('42')})\n"
        "    start_response('200 OK', [('Content-Type', 'application/json')])\n"
        "    return [body.encode()]\n")
    r = m0test.request(server.port, path="/")
    assert r.status == 200, r.body
    got = json.loads(r.body)
    assert got["decimal"] == "3.3" and got["pydantic"] == 42
    assert got["exe"] == os.path.realpath(m0test.M0_BINARY)
    if linked_into_m0:
        assert got["libpython"] == [], got
    else:
        assert len(got["libpython"]) == 1 and "libpython3.11.so" in got["libpython"][0], got
