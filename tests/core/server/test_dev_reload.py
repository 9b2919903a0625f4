"""`--reload` (development, issue 45): m0 watches the app's directory and
restarts its serving processes on the same listening sockets when a file
changes — an edit, an editor's rename-save, a new package directory — and a
change that fails to import is logged with its traceback while the last good
code keeps serving. With one serving process and with --workers 2.

Every wait is on a response or a log line, bounded by a generous deadline."""
import http.client
import os
import sys

import pytest

import m0test

PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-frontend-wsgi.so")),
                                reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")

APP = '''
try:
    from extra.values import EXTRA
except ImportError:
    EXTRA = "none"

BODY = {body!r}


def app(environ, start_response):
    body = (BODY + " extra=" + EXTRA).encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]
'''


def write(path, text):
    """Saves as editors do: a new file renamed over the old one."""
    tmp = path.with_name("." + path.name + ".swp")
    tmp.write_text(text)
    os.replace(tmp, path)


def get(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=m0test.scaled(10))
    try:
        conn.request("GET", "/")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def serves(server, body, timeout=60):
    """Polls until a response is `body` (a reload may be in progress: a
    refused connection or an old body are retried)."""
    def answered():
        try:
            return get(server) == body
        except OSError:
            return False
    server.wait_until(answered, timeout=timeout, what=f"m0 to serve {body!r}")


@pytest.fixture(params=[1, 2], ids=["one-process", "workers-2"])
def reloading(request, tmp_path):
    (tmp_path / "dev_app.py").write_text(APP.format(body="first"))
    args = ["dev_app:app", "--chdir", str(tmp_path), "--reload"]  # --interface auto
    if request.param > 1:
        args += ["--workers", str(request.param)]
    server = m0test.Server(None, *args, env={"VIRTUAL_ENV": sys.prefix, "PYTHONDONTWRITEBYTECODE": "1"})
    try:
        server.start()
        yield server, tmp_path
    finally:
        assert server.finish() is None


def test_an_edit_is_served_and_the_log_says_reload_mode_is_for_development(reloading):
    server, src = reloading
    assert get(server) == "first extra=none"
    assert server.output().count("reload mode is for development") == 1
    (src / "dev_app.py").write_text(APP.format(body="second version"))  # written in place
    serves(server, "second version extra=none")
    write(src / "dev_app.py", APP.format(body="third"))  # renamed over it
    serves(server, "third extra=none")
    server.wait_for_log("dev_app.py changed; reloading", count=2)
    assert server.output().count("reload mode is for development") == 1
    # The interface was probed (an import) at start only, not at each reload.
    assert server.output().count("serving it as wsgi (--interface auto)") == 1


def test_a_new_directory_is_watched(reloading):
    server, src = reloading
    (src / "extra").mkdir()
    (src / "extra" / "__init__.py").write_text("")
    (src / "extra" / "values.py").write_text('EXTRA = "one"\n')
    serves(server, "first extra=one")
    # A file edited in it later: its directory is watched now.
    (src / "extra" / "values.py").write_text('EXTRA = "two, later"\n')
    serves(server, "first extra=two, later")


def test_a_syntax_error_keeps_the_last_good_code_serving_until_it_is_fixed(reloading):
    server, src = reloading
    write(src / "dev_app.py", "def app(:\n")
    server.wait_for_log("reload refused", timeout=60)
    assert "SyntaxError" in server.output(), server.output()
    assert get(server) == "first extra=none"
    write(src / "dev_app.py", APP.format(body="fixed"))
    serves(server, "fixed extra=none")


def test_excluded_and_other_files_do_not_reload(tmp_path):
    (tmp_path / "dev_app.py").write_text(APP.format(body="first"))
    server = m0test.Server(None, "dev_app:app", "--interface", "wsgi", "--chdir", str(tmp_path), "--reload",
                           "--reload-exclude", "ignored_*.py", "--reload-include", "*.py",
                           "--reload-include", "*.txt", env={"VIRTUAL_ENV": sys.prefix})
    try:
        server.start()
        (tmp_path / "ignored_scratch.py").write_text("x = 1\n")
        (tmp_path / "notes.md").write_text("not watched\n")
        (tmp_path / ".venv").mkdir()
        (tmp_path / ".venv" / "site.py").write_text("x = 1\n")
        # Then a watched file: the first reload the log names is this one.
        (tmp_path / "data.txt").write_text("watched\n")
        server.wait_for_log("changed; reloading", timeout=30)
        lines = [l for l in server.output().splitlines() if "changed; reloading" in l]
        assert lines[0].endswith(f"{tmp_path / 'data.txt'} changed; reloading"), lines
        serves(server, "first extra=none")
    finally:
        assert server.finish() is None


def test_polling_sees_an_edit(tmp_path):
    (tmp_path / "dev_app.py").write_text(APP.format(body="first"))
    server = m0test.Server(None, "dev_app:app", "--interface", "wsgi", "--chdir", str(tmp_path), "--reload",
                           env={"VIRTUAL_ENV": sys.prefix, "PYTHONDONTWRITEBYTECODE": "1", "M0_RELOAD_POLL": "1"})
    try:
        server.start()
        server.wait_for_log("watching by polling")
        write(tmp_path / "dev_app.py", APP.format(body="polled"))
        serves(server, "polled extra=none")
    finally:
        assert server.finish() is None


def test_the_config_file_is_watched_and_m0_reload_works_from_the_environment(tmp_path):
    """A native deployment: its YAML is the source. --reload as M0_RELOAD,
    the directory as M0_RELOAD_DIR."""
    config = tmp_path / "m0.yaml"
    route = "frontend:\n  type: http\n  routes:\n    - path: /\n      body: {body!r}\n"
    config.write_text(route.format(body="from the first config"))
    server = m0test.Server(str(config), env={"M0_RELOAD": "1", "M0_RELOAD_DIR": str(tmp_path / "none")})
    try:
        server.start()
        server.wait_for_log("reload mode is for development")
        assert f"reload: {tmp_path / 'none'} is not a directory" in server.output()
        write(config, route.format(body="from the second config"))
        serves(server, "from the second config")
        server.wait_for_log(f"{config} changed; reloading")
        # A broken config: refused, the last good one serves.
        write(config, "frontend:\n  type: htp\n")
        server.wait_for_log("reload refused")
        assert get(server) == "from the second config"
    finally:
        assert server.finish() is None


def test_an_app_that_starts_a_thread_at_import_is_refused_in_words(tmp_path):
    apps = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
    out = m0test.run_m0("prefork_thread_app:app", "--interface", "wsgi", "--chdir", apps, "--reload",
                        "--reload-dir", str(tmp_path), "--listen", "127.0.0.1:0", env={"VIRTUAL_ENV": sys.prefix})
    assert out.returncode == 1
    assert "--reload serves from a forked process even with one" in out.stderr, out.stderr
