"""The command-line habits of uvicorn, Granian and gunicorn users (issue 45):
`m0 MODULE:APP`, --host/--port, -b/--bind, --factory, an M0_ variable for
every flag with the flag winning, --check saying where each setting came
from, and the peer flags whose meaning differs (-c FILE.py, -t)."""
import http.client
import json
import os
import re
import sys

import pytest

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
HTTP_APPS = os.path.join(os.path.dirname(HERE), "http", "apps")  # client_apps.py
PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
CONFIG_ERROR = 2

needs_python = pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-frontend-wsgi.so")),
                                  reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")

# Without M0_ variables of the caller's (the harness's own are not flags).
ENV = {"VIRTUAL_ENV": sys.prefix}

FACTORY_APP = '''
def create_app():
    def app(environ, start_response):
        body = b"made by the factory"
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]
    return app
'''


def m0(*args, env=None, **kw):
    return m0test.run_m0(*args, env=dict(ENV, **(env or {})), **kw)


def listen_of(check_stdout):
    match = re.search(r"^  listen:\n((?:    - .*\n)+)", check_stdout, re.M)
    assert match, check_stdout
    return [line.strip()[2:].strip("'\"") for line in match.group(1).splitlines()]


def has_key(check_stdout, key, value):
    """`key: value` in --check's YAML (a value set on the command line may be quoted)."""
    return re.search(rf'^\s+{key}: "?{re.escape(str(value))}"?$', check_stdout, re.M) is not None


def origins(check_stdout):
    """--check's comment lines: "key=value    <- source"."""
    return [line[4:] for line in check_stdout.splitlines() if line.startswith("#   ")]


@needs_python
def test_the_app_as_the_positional_argument_with_host_and_port():
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "--host", "0.0.0.0", "--port", "9123", "--check")
    assert out.returncode == 0, out.stderr
    assert listen_of(out.stdout) == ["0.0.0.0:9123"]
    assert "app: client_apps:wsgi_app" in out.stdout and "type: wsgi" in out.stdout, out.stdout
    assert "frontend.app='client_apps:wsgi_app'    <- the MODULE:APP argument" in origins(out.stdout)
    assert "server.listen=['0.0.0.0:9123']    <- --host/--port" in origins(out.stdout)
    # --port alone: on 127.0.0.1, as uvicorn; an IPv6 host is bracketed.
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "--port", "9124", "--check")
    assert listen_of(out.stdout) == ["127.0.0.1:9124"], out.stdout
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "--host", "::1", "--check")
    assert listen_of(out.stdout) == ["[::1]:8000"], out.stdout


@needs_python
def test_bind_is_repeatable_and_joins_listen():
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "-b", "127.0.0.1:9001", "--bind", "[::1]:9002",
             "--listen", "127.0.0.1:9003", "--check")
    assert out.returncode == 0, out.stderr
    assert listen_of(out.stdout) == ["127.0.0.1:9003", "127.0.0.1:9001", "[::1]:9002"]
    assert "server.listen=['127.0.0.1:9003','127.0.0.1:9001','[::1]:9002']    <- --listen, --bind" in \
        origins(out.stdout), out.stdout


@needs_python
def test_the_positional_app_serves_and_factory_calls_it(tmp_path):
    (tmp_path / "factory_app.py").write_text(FACTORY_APP)
    server = m0test.Server(None, "factory_app:create_app", "--factory", "--chdir", str(tmp_path), env=ENV)
    try:
        server.start()
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=m0test.scaled(10))
        conn.request("GET", "/")
        assert conn.getresponse().read() == b"made by the factory"
    finally:
        server.finish()
    out = m0("factory_app:create_app", "--factory", "--chdir", str(tmp_path), "--check")
    assert "app: factory_app:create_app()" in out.stdout, out.stdout
    # The call form already given: --factory adds nothing.
    out = m0("factory_app:create_app()", "--factory", "--chdir", str(tmp_path), "--check")
    assert "app: factory_app:create_app()" in out.stdout, out.stdout
    out = m0("--factory", "--port", "9000")
    assert out.returncode == CONFIG_ERROR and "--factory needs an app" in out.stderr


def test_a_command_stays_a_command_and_a_mistyped_one_names_those_that_exist():
    out = m0("plugins")
    assert out.returncode == 0 and "search path:" in out.stdout
    out = m0("plugns")
    assert out.returncode == CONFIG_ERROR
    assert "unknown command 'plugns' (did you mean 'plugins'?): the one command is 'plugins'" in out.stderr
    assert "to serve, give MODULE:APP" in out.stderr
    out = m0("main:app", "extra")
    assert out.returncode == CONFIG_ERROR and "unexpected argument 'extra' after the app 'main:app'" in out.stderr
    out = m0("main:app", "--app", "other:app")
    assert out.returncode == CONFIG_ERROR and "the app is given twice" in out.stderr


@needs_python
def test_every_flag_has_its_variable_and_the_flag_wins():
    base = ("--chdir", HTTP_APPS, "--check")
    out = m0(*base, env={"M0_APP": "client_apps:wsgi_app", "M0_WORKERS": "3", "M0_INTERFACE": "wsgi",
                         "M0_LISTEN": "127.0.0.1:9011;127.0.0.1:9012", "M0_ACCESS_LOG": "1",
                         "M0_SET": "http.keepalive_timeout=5s\nhttp.header_timeout=7s"})
    assert out.returncode == 0, out.stderr
    assert has_key(out.stdout, "workers", 3) and has_key(out.stdout, "access", "true"), out.stdout
    assert has_key(out.stdout, "keepalive_timeout", "5s") and has_key(out.stdout, "header_timeout", "7s"), out.stdout
    assert listen_of(out.stdout) == ["127.0.0.1:9011", "127.0.0.1:9012"]
    lines = origins(out.stdout)
    assert "server.workers=3    <- M0_WORKERS" in lines, lines
    assert "frontend.app='client_apps:wsgi_app'    <- M0_APP" in lines, lines
    assert "http.keepalive_timeout=5s    <- M0_SET" in lines, lines
    # A flag over its variable, over the YAML; --set over M0_SET.
    out = m0(*base, "--workers", "2", "-b", "127.0.0.1:9013", "--set", "http.keepalive_timeout=9s",
             env={"M0_APP": "client_apps:wsgi_app", "M0_WORKERS": "3", "M0_LISTEN": "127.0.0.1:9011",
                  "M0_SET": "http.keepalive_timeout=5s"})
    assert out.returncode == 0, out.stderr
    assert has_key(out.stdout, "workers", 2) and has_key(out.stdout, "keepalive_timeout", "9s"), out.stdout
    assert listen_of(out.stdout) == ["127.0.0.1:9013"]
    assert "server.workers=2    <- --workers" in origins(out.stdout)


@needs_python
def test_a_variable_over_the_yaml_and_a_switch_by_its_value(tmp_path):
    config = tmp_path / "m0.yaml"
    config.write_text("server:\n  workers: 4\n  threads: 1\n")
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "--check",
             env={"M0_CONFIG": str(config), "M0_WORKERS": "2", "M0_FACTORY": "0"})
    assert out.returncode == 0, out.stderr
    assert has_key(out.stdout, "workers", 2) and has_key(out.stdout, "threads", 1), out.stdout
    assert "app: client_apps:wsgi_app\n" in out.stdout, out.stdout  # M0_FACTORY=0: not a factory
    assert f"the YAML file {config}    <- M0_CONFIG" in origins(out.stdout)
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "--check", env={"M0_FACTORY": "maybe"})
    assert out.returncode == CONFIG_ERROR
    assert "M0_FACTORY=maybe: expected 1, true, yes or on" in out.stderr


@needs_python
def test_an_unknown_variable_like_a_flag_is_warned_and_m0s_own_stay_silent():
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "--check",
             env={"M0_WORKER": "2", "M0_POOL_RING": "64", "M0_PLUGIN_PATH": "", "M0_CHECK": "1"})
    assert out.returncode == 0, out.stderr
    assert "M0_WORKER is not an m0 variable and is ignored (did you mean M0_WORKERS, for --workers?)" in out.stderr
    assert "M0_CHECK is ignored: --check is only read from the command line" in out.stderr
    assert "M0_POOL_RING" not in out.stderr and "M0_PLUGIN_PATH" not in out.stderr, out.stderr


def test_a_gunicorn_python_config_is_refused_with_the_keys_it_maps_to(tmp_path):
    out = m0("-c", str(tmp_path / "gunicorn.conf.py"), "main:app")
    assert out.returncode == CONFIG_ERROR
    assert "m0 takes a YAML file, not a Python one (gunicorn's -c)" in out.stderr, out.stderr
    assert "workers -> server.workers" in out.stderr and "docs/migrating.md" in out.stderr


@needs_python
def test_threads_beyond_the_cpus_says_what_gunicorns_t_means():
    many = (os.cpu_count() or 1) + 28
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "-t", str(many), "--check")
    assert out.returncode == 0, out.stderr
    assert f"{many} reactor threads per process" in out.stderr
    assert "gunicorn's -t is a timeout" in out.stderr and "executor.pool.threads" in out.stderr
    out = m0("client_apps:wsgi_app", "--chdir", HTTP_APPS, "--reactors", "1", "--check")
    assert "server.threads=1    <- --reactors" in origins(out.stdout) and "gunicorn" not in out.stderr
