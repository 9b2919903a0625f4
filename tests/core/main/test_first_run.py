"""The first minutes of a new user, through the m0 command: the shortcuts
people type (--venv, --chdir, --log-level, --access-log), `m0 plugins` and
its mistakes, a misspelled plugin type, YAML syntax errors in words, an app
that cannot be imported, and --check refusing what serving would refuse.
Configuration errors exit 2, as the README says."""
import os
import sys

import pytest

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
HTTP_APPS = os.path.join(os.path.dirname(HERE), "http", "apps")      # client_apps.py
SERVER_APPS = os.path.join(os.path.dirname(HERE), "server", "apps")  # prefork_thread_app.py
PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
CONFIG_ERROR = 2

needs_python = pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-frontend-wsgi.so")),
                                  reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")


def check(tmp_path, yaml_text, *args):
    path = tmp_path / "m0.yaml"
    path.write_text(yaml_text)
    return path, m0test.run_m0("--config", str(path), "--check", *args)


def test_m0_plugins_lists_inline_and_every_description():
    out = m0test.run_m0("plugins")
    assert out.returncode == 0, out.stderr
    rows = {line.split("\t")[0]: line.split("\t") for line in out.stdout.splitlines()[1:]}
    assert rows["inline"][1] == "executor" and "reactor thread" in rows["inline"][2]
    assert rows["http"][1] == "frontend" and rows["http"][2] == "static files and fixed-response routes"
    assert rows["pool"][2], rows["pool"]


def test_m0_plugins_with_an_argument_and_unknown_commands_say_what_is_wrong():
    out = m0test.run_m0("plugins", "foo")
    assert out.returncode == CONFIG_ERROR
    assert "m0 plugins: unexpected argument 'foo': it takes none" in out.stderr
    out = m0test.run_m0("plugin")
    assert out.returncode == CONFIG_ERROR
    assert "unknown command 'plugin' (did you mean 'plugins'?)" in out.stderr


def test_a_misspelled_plugin_type_is_located_with_the_nearest_name_and_the_list(tmp_path):
    path, out = check(tmp_path, "server:\n  threads: 1\nfrontend:\n  type: htp\n")
    assert out.returncode == CONFIG_ERROR
    assert (f"{path}:4:9: frontend.type: no frontend plugin 'htp' (did you mean 'http'?); "
            "frontend plugins found: asgi, http, wsgi") in out.stderr, out.stderr
    path, out = check(tmp_path, "frontend: {type: http}\nexecutor:\n  type: pol\n")
    assert out.returncode == CONFIG_ERROR
    assert (f"{path}:3:9: executor.type: no executor plugin 'pol' (did you mean 'pool'?); "
            "executor plugins found: asyncio, inline, pool") in out.stderr, out.stderr
    # Nothing near: no suggestion, still the list.
    path, out = check(tmp_path, "frontend:\n  type: gopher\n")
    assert out.returncode == CONFIG_ERROR
    assert "no frontend plugin 'gopher'; frontend plugins found: asgi, http, wsgi" in out.stderr, out.stderr


def test_yaml_syntax_errors_are_in_words(tmp_path):
    path, out = check(tmp_path, "server:\n\tthreads: 2\n")
    assert out.returncode == CONFIG_ERROR
    assert f"{path}:2:1: YAML syntax: a tab in the indentation; YAML indents with spaces only" in out.stderr
    path, out = check(tmp_path, "server:\n  listen: [127.0.0.1:8000, '[::1]:8000'\n  threads: 2\nlog: {level: info}\n")
    assert out.returncode == CONFIG_ERROR
    assert f"{path}:2:11: YAML syntax: this '[' is never closed" in out.stderr, out.stderr


@needs_python
def test_shortcuts_are_sets_underneath(tmp_path):
    log_file = tmp_path / "access.log"
    out = m0test.run_m0("--app", "client_apps:wsgi_app", "--interface", "wsgi", "--chdir", HTTP_APPS,
                        "--venv", sys.prefix, "--log-level", "warning", f"--access-log={log_file}", "--check")
    assert out.returncode == 0, out.stderr
    effective = out.stdout
    assert f"chdir: {HTTP_APPS}" in effective, effective
    assert f"venv: {sys.prefix}" in effective, effective
    assert "level: warning" in effective and "access: true" in effective, effective
    assert f"access_file: {log_file}" in effective, effective
    # --access-log alone: to stderr.
    out = m0test.run_m0("--app", "client_apps:wsgi_app", "--interface", "wsgi", "--chdir", HTTP_APPS,
                        "--access-log", "--check", env={"VIRTUAL_ENV": sys.prefix})
    assert out.returncode == 0, out.stderr
    assert "access: true" in out.stdout and "access_file" not in out.stdout.split("access: true")[1].split("\n")[0]
    out = m0test.run_m0("--app", "client_apps:wsgi_app", "--log-level", "loud", "--check")
    assert out.returncode == CONFIG_ERROR
    assert "log.level" in out.stderr and "loud" in out.stderr


def effective_section(text, name):
    """The lines of one top-level section of --check's output."""
    lines, inside = [], False
    for line in text.splitlines():
        if line and not line.startswith(" "):
            inside = line.startswith(name + ":")
        elif inside:
            lines.append(line.strip())
    return lines


@needs_python
def test_the_defaults_of_workers_share_the_cores_and_bound_the_pool():
    """`--workers N` alone: CPUs / N reactors per process (never more reactors
    than cores), a pool of one thread that grows while its threads are blocked,
    up to 32 (a process opens at most one database connection per pool
    thread: --check prints the total), all shown by --check."""
    cpus = os.cpu_count() or 1
    base = ("--app", "client_apps:wsgi_app", "--interface", "wsgi", "--chdir", HTTP_APPS, "--check")
    for workers in (1, 2, 4):
        out = m0test.run_m0(*base, "--workers", str(workers), env={"VIRTUAL_ENV": sys.prefix})
        assert out.returncode == 0, out.stderr
        server = effective_section(out.stdout, "server")
        assert f"threads: {max(1, cpus // workers)}" in server, out.stdout
        executor = effective_section(out.stdout, "executor")
        assert "type: pool" in executor and "threads: 1" in executor and "max_threads: 32" in executor, out.stdout
        assert "growth: blocked" in executor, out.stdout
        assert f"{workers} process(es) x (32 threads + 4 written off at a request deadline) = {36 * workers}" \
            in out.stderr, out.stderr


@needs_python
def test_a_key_of_the_effective_executor_is_set_without_its_type(tmp_path):
    base = ("--app", "client_apps:wsgi_app", "--interface", "wsgi", "--chdir", HTTP_APPS, "--check")
    env = {"VIRTUAL_ENV": sys.prefix}
    out = m0test.run_m0(*base, "--set", "executor.pool.threads=2", env=env)
    assert out.returncode == 0, out.stderr
    executor = effective_section(out.stdout, "executor")
    assert "type: pool" in executor and "threads: 2" in executor and "max_threads: 2" in executor, out.stdout
    # Settings of an executor that does not run are still refused, located.
    out = m0test.run_m0(*base, "--set", "executor.asyncio.loops=2", env=env)
    assert out.returncode == CONFIG_ERROR
    assert ("executor.asyncio: settings for executor 'asyncio' but the effective executor is 'pool' (the "
            "frontend's default); set executor.type: asyncio to run on it") in out.stderr, out.stderr
    path, out = check(tmp_path, "frontend:\n  type: http\nexecutor:\n  pool: {threads: 2}\n")
    assert out.returncode == CONFIG_ERROR
    assert (f"{path}:4:3: executor.pool: settings for executor 'pool' but the effective executor is 'inline'"
            in out.stderr), out.stderr


@needs_python
def test_a_missing_module_says_which_python_and_sys_path(tmp_path):
    out = m0test.run_m0("--app", "no_such_module_m0:app", "--interface", "wsgi", "--chdir", str(tmp_path),
                        "--check", env={"VIRTUAL_ENV": sys.prefix})
    assert out.returncode == CONFIG_ERROR
    assert "No module named 'no_such_module_m0'" in out.stderr, out.stderr
    assert f"virtual environment {sys.prefix}" in out.stderr, out.stderr
    assert f"sys.path: ['{tmp_path}'" in out.stderr, out.stderr
    assert "python.venv (--venv) or VIRTUAL_ENV" in out.stderr


@needs_python
def test_check_imports_the_app_and_refuses_threads_at_import_under_workers():
    base = ("--app", "prefork_thread_app:app", "--interface", "wsgi", "--chdir", SERVER_APPS, "--check")
    env = {"VIRTUAL_ENV": sys.prefix}
    out = m0test.run_m0(*base, "--workers", "2", env=env)
    assert out.returncode == CONFIG_ERROR
    assert "server.workers is 2 but 1 thread(s) already run after the application was imported" in out.stderr
    assert "configuration OK" not in out.stderr
    out = m0test.run_m0(*base, env=env)  # one process: no fork, nothing to refuse
    assert out.returncode == 0, out.stderr
    assert "configuration OK" in out.stderr


@needs_python
def test_check_prints_absolute_paths_and_warns_of_static_files_at_the_root(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "www").mkdir()
    (project / "lib").mkdir()
    (project / "extra-plugins").mkdir()
    (project / "lib" / "greeting.py").write_text("TEXT = b'hi'\n")
    (project / "src" / "hello.py").write_text(
        "from greeting import TEXT\n"
        "def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Length', '2')])\n"
        "    return [TEXT]\n")
    venv = os.path.relpath(sys.prefix, project)
    (project / "m0.yaml").write_text(
        "frontend:\n"
        "  type: wsgi\n"
        "  app: hello:app\n"
        "  chdir: src\n"
        "  static: {root: www}\n"
        f"python: {{venv: {venv}, path: [lib]}}\n"
        "plugins: {path: [extra-plugins]}\n"
        "log: {access: true, access_file: access.log}\n")
    out = m0test.run_m0("--config", str(project / "m0.yaml"), "--check")
    assert out.returncode == 0, out.stderr
    for line in (f"chdir: {project / 'src'}", f"root: {project / 'www'}", f"venv: {sys.prefix}",
                 f"access_file: {project / 'access.log'}", str(project / "lib"), str(project / "extra-plugins")):
        assert line in out.stdout, out.stdout
    assert "frontend.static: files at prefix '/' hide the application from every GET and HEAD" in out.stderr
    assert f"{project / 'm0.yaml'}:5:" in out.stderr  # where the static mount is
    # Saved elsewhere, the printed configuration is still valid.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "m0.yaml").write_text(out.stdout)
    again = m0test.run_m0("--config", str(elsewhere / "m0.yaml"), "--check")
    assert again.returncode == 0, again.stderr
    # With a prefix, no warning.
    (project / "m0.yaml").write_text(
        "frontend: {type: wsgi, app: 'hello:app', chdir: src, static: {prefix: /static/, root: www}}\n"
        f"python: {{venv: {venv}, path: [lib]}}\n")
    out = m0test.run_m0("--config", str(project / "m0.yaml"), "--check")
    assert out.returncode == 0 and "hide the application" not in out.stderr, out.stderr


def test_check_reports_a_mistake_in_every_section_in_one_run(tmp_path):
    path, out = check(tmp_path, "server:\n  thread: 2\n  worker: 1\nhttp:\n  max_body: 1m\nlog:\n  level: loud\n"
                                "frontend: {type: http}\n")
    assert out.returncode == CONFIG_ERROR
    for error in (f"{path}:2:3: server.thread: unknown key 'thread' (did you mean 'threads'?)",
                  f"{path}:3:3: server.worker: unknown key 'worker' (did you mean 'workers'?)",
                  f"{path}:5:3: http.max_body: unknown key 'max_body'",
                  f"{path}:7:10: log.level:"):
        assert error in out.stderr, out.stderr


def assert_reported_in_order(out, errors):
    """Each error is on stderr, in the order given (the file's)."""
    at = [out.stderr.find(error) for error in errors]
    assert -1 not in at, out.stderr
    assert at == sorted(at), out.stderr


def test_check_reports_every_error_of_the_core_and_of_each_plugin_in_one_run(tmp_path):
    path, out = check(tmp_path,
                      "server:\n"
                      "  threads: many\n"          # 2: core
                      "frontend:\n"
                      "  type: http\n"
                      "  routes:\n"
                      "    - path: /a\n"
                      "      status: 999\n"        # 7: http, a bad value
                      "      bodi: hello\n"        # 8: http, an unknown key
                      "executor:\n"
                      "  type: pool\n"
                      "  pool:\n"
                      "    spin: 5s\n"             # 12: pool
                      "log:\n"
                      "  level: loud\n")           # 14: core
    assert out.returncode == CONFIG_ERROR, out.stderr
    assert "configuration OK" not in out.stderr
    assert_reported_in_order(out, [
        f"{path}:2:12: server.threads: expected an integer in 1..256, found 'many'",
        f"{path}:7:15: frontend.routes[0].status: expected an integer in 200..599, found '999'",
        f"{path}:8:7: frontend.routes[0].bodi: unknown key 'bodi' (did you mean 'body'?)",
        f"{path}:12:11: executor.pool.spin: expected a duration in 0..1s",
        f"{path}:14:10: log.level: expected one of debug, info, warning, error, found 'loud'",
    ])
    # One error a line, nothing else.
    assert len(out.stderr.strip().splitlines()) == 5, out.stderr


def test_check_skips_only_the_section_of_a_plugin_it_cannot_find(tmp_path):
    path, out = check(tmp_path,
                      "frontend:\n"
                      "  type: htp\n"               # 2: no such plugin; its keys are not checked
                      "  routes: 5\n"
                      "executor:\n"
                      "  type: pool\n"
                      "  pool:\n"
                      "    threads: 0\n"            # 7
                      "    ring: fast\n")           # 8
    assert out.returncode == CONFIG_ERROR, out.stderr
    assert_reported_in_order(out, [
        f"{path}:2:9: frontend.type: no frontend plugin 'htp' (did you mean 'http'?)",
        f"{path}:7:14: executor.pool.threads: expected an integer in 1..",
        f"{path}:8:11: executor.pool.ring: expected one of vyukov, lockfree, none, found 'fast'",
    ])
    assert "frontend.routes" not in out.stderr
