"""SIGHUP to the supervisor: the configuration and the code as they are now
are checked (m0 --check), then new worker processes start and serve before
the old ones drain, on listening sockets that never close; a configuration
that fails the check is refused and the old processes serve on."""
import os
import re
import signal
import sys

import pytest

import m0test
from load_support import under_load, wait_for_requests
from prefork_support import wait_for_children

WSGI_PLUGIN = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-frontend-wsgi.so")


def routes(body):
    return (
        "frontend:\n"
        "  type: http\n"
        "  routes:\n"
        f"    - {{path: /hello, body: '{body}'}}\n"
    )


def body(server):
    response = m0test.request(server.port, path="/hello")
    assert response.status == 200
    return response.body


def reload(server, count):
    """Sends SIGHUP and waits until the `count`th reload has drained the
    previous worker processes; returns the new ones."""
    before = sorted(wait_for_children(server.proc.pid, 2))
    os.kill(server.proc.pid, signal.SIGHUP)
    server.wait_for_log("supervisor: reloaded: 2 new worker process(es) serve; draining the 2 previous one(s)",
                        count=count, timeout=60)
    for pid in before:
        server.wait_for_log(f"supervisor: previous worker process (pid {pid}) exited with code 0", timeout=60)
    after = wait_for_children(server.proc.pid, 2)
    assert not set(after) & set(before)
    return after


@pytest.mark.parametrize("listener", ["reuseport", "shared"])
def test_reloads_under_load_refuse_and_reset_no_connection(m0_server, tmp_path, listener):
    access = tmp_path / "access.log"
    config = routes("Hello, World!") + f"log: {{access: true, access_file: {access}}}\n"
    server = m0_server(config, "--workers", "2", "--set", f"server.listener={listener}")
    supervisor = server.proc.pid

    def three_reloads():
        for count in (1, 2, 3):
            reload(server, count)
            # The new processes carry the load before the next reload.
            wait_for_requests(server, access, 200)
    under_load(server, access, three_reloads)
    # Same supervisor throughout: a reload execs m0 in place.
    assert server.proc.pid == supervisor and server.proc.poll() is None
    assert server.stop() == 0


def test_a_config_that_fails_the_check_is_refused_and_a_fixed_one_is_loaded(m0_server, tmp_path):
    config = tmp_path / "m0.yaml"
    config.write_text(routes("first"))
    server = m0_server(str(config), "--workers", "2")
    workers = sorted(wait_for_children(server.proc.pid, 2))
    assert body(server) == b"first"
    config.write_text(routes("second") + "server: {thraeds: 2}\n")
    os.kill(server.proc.pid, signal.SIGHUP)
    server.wait_for_log("supervisor: reload refused: the configuration check exited with code 2 (its errors are "
                        "above); the current worker processes keep serving")
    assert "server.thraeds: unknown key 'thraeds' (did you mean 'threads'?)" in server.output()
    assert sorted(wait_for_children(server.proc.pid, 2)) == workers
    assert body(server) == b"first"
    config.write_text(routes("second"))
    reload(server, 1)
    assert body(server) == b"second"
    assert server.stop() == 0


@pytest.mark.skipif(not os.path.exists(WSGI_PLUGIN), reason="the frontend-wsgi plugin is not built")
def test_a_reload_imports_the_application_anew(m0_server, tmp_path):
    app = tmp_path / "reloaded_app.py"
    app.write_text("def app(environ, start_response):\n"
                   "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
                   "    return [b'version 1']\n")
    config = f"frontend: {{type: wsgi, app: 'reloaded_app:app', chdir: {tmp_path}}}\nexecutor: {{type: inline}}\n"
    server = m0_server(config, "--workers", "2", env={"VIRTUAL_ENV": sys.prefix, "PYTHONDONTWRITEBYTECODE": "1"})
    wait_for_children(server.proc.pid, 2)
    assert m0test.request(server.port).body == b"version 1"
    app.write_text(app.read_text().replace("version 1", "version 2, reloaded"))
    reload(server, 1)
    for _ in range(20):
        assert m0test.request(server.port).body == b"version 2, reloaded"
    assert server.stop() == 0


def test_a_reload_may_change_the_scheduler_when_the_sockets_stay_the_same(m0_server, tmp_path):
    # One reactor per process: `reactors` with reuseport and `balanced` both
    # want one reuseport socket per process and address.
    config = tmp_path / "m0.yaml"
    config.write_text(routes("first") + "scheduler: {type: reactors, listener: reuseport}\n")
    server = m0_server(str(config), "--workers", "2", threads=1)
    assert "(scheduler reactors)" in server.output()
    config.write_text(routes("second") + "scheduler: {type: balanced, listener: reuseport}\n")
    reload(server, 1)
    assert body(server) == b"second"
    assert "worker processes of 1 thread(s) each (scheduler balanced)" in server.output()
    assert server.stop() == 0


def test_a_reload_that_would_change_the_listening_sockets_is_refused_with_the_reason(m0_server, tmp_path):
    # Two reactors per process: `reactors` with reuseport holds two reuseport
    # sockets per process and address, `balanced` would want one shared
    # socket (its default with several processes); the connections queued
    # on the reuseport ones would be lost.
    config = tmp_path / "m0.yaml"
    config.write_text(routes("first") + "scheduler: {listener: reuseport}\n")
    server = m0_server(str(config), "--workers", "2", threads=2)
    workers = sorted(wait_for_children(server.proc.pid, 2))
    config.write_text(routes("second") + "scheduler: {type: balanced}\n")
    os.kill(server.proc.pid, signal.SIGHUP)
    server.wait_for_log("supervisor: reload refused: the configuration check exited with code 2")
    assert ("this reload would change the listening sockets from 2 reuseport sockets per process and address to "
            "one shared socket per address (scheduler balanced)") in server.output()
    assert sorted(wait_for_children(server.proc.pid, 2)) == workers
    assert body(server) == b"first"
    assert server.stop() == 0
