"""server.workers > 1 with a WSGI app: the app is imported once by the
supervisor, then each worker process runs its own interpreter."""
import json
import os
import re
import signal
import sys

import pytest

import m0test
from prefork_support import alive, wait_for_children

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
POOL_PLUGIN = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-executor-pool.so")
WSGI_PLUGIN = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-frontend-wsgi.so")
# The embedded interpreter runs in the test venv.
VENV = {"VIRTUAL_ENV": sys.prefix}

pytestmark = pytest.mark.skipif(not os.path.exists(WSGI_PLUGIN), reason="the frontend-wsgi plugin is not built")


@pytest.fixture(params=["inline", "pool"])
def executor(request):
    if request.param == "pool" and not os.path.exists(POOL_PLUGIN):
        pytest.skip("the executor-pool plugin is not built (no m0-executor-pool.so)")
    return request.param


def config(app, executor):
    return (
        "frontend:\n"
        "  type: wsgi\n"
        f"  app: \"{app}\"\n"
        f"  chdir: {APPS}\n"
        "executor:\n"
        f"  type: {executor}\n"
    )


def served_by(port, path="/"):
    response = m0test.request(port, path=path)
    assert response.status == 200, response.body
    return json.loads(response.body)


def test_two_processes_serve_with_their_own_interpreter(m0_server, executor):
    server = m0_server(config("prefork_app:app", executor), "--set", "server.workers=2", env=VENV)
    supervisor = server.proc.pid
    workers = wait_for_children(supervisor, 2)
    seen = set()
    for _ in range(400):
        info = served_by(server.port)
        # Imported before the fork (copy-on-write), served after it.
        assert info["imported_in"] == supervisor
        assert info["multiprocess"] is True
        seen.add(info["pid"])
        if len(seen) == 2:
            break
    assert seen == set(workers)
    # Python works after the fork: a fresh import and a new thread, in
    # every process.
    worked = {}
    for _ in range(400):
        info = served_by(server.port, "/work")
        assert info["digest"] == "e4223ed20d7ea574"
        worked[info["pid"]] = worked.get(info["pid"], 0) + 1
        if len(worked) == 2 and min(worked.values()) >= 10:
            break
    assert set(worked) == set(workers) and min(worked.values()) >= 10
    assert server.stop() == 0
    assert not [pid for pid in workers if alive(pid)]


def test_a_process_stuck_in_the_app_is_gone_after_its_drain(m0_server, executor):
    # The app never returns and keeps the GIL. On the pool the serving
    # process abandons it at the drain deadline and exits 0 by itself. With
    # `inline` the app holds the reactor thread, which the process detaches
    # only after its exit grace (deadline + 6 s): the supervisor's kill
    # (deadline + 5 s) may come first. Either way the supervisor exits 0 and
    # leaves no process behind.
    server = m0_server(config("prefork_app:app", executor), "--set", "server.workers=2",
                       "--set", "server.drain_timeout=1s", env=VENV)
    with server.connect() as s:
        s.sendall(b"GET /hold-the-gil HTTP/1.1\r\nHost: h\r\n\r\n")
        stuck = int(server.wait_for_log(re.compile(r"holding the GIL in pid (\d+)")).group(1))
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        assert m0test.recv_until_closed(s) == b""  # cut, not answered
    out = server.output()
    killed = re.search(rf"warning: supervisor: worker process \d \(pid {stuck}\) did not stop in time; killing it", out)
    if executor == "pool":
        assert re.search(rf"m0\[{stuck}\] info: reactor 0: .*force-closed 1, in flight at deadline 1, jobs abandoned 1", out), out
        assert re.search(rf"supervisor: worker process \d \(pid {stuck}\) exited with code 0", out), out
        assert not killed, out
    else:
        assert killed or re.search(rf"m0\[{stuck}\] error: reactor 0 did not stop in time; detached", out), out
    assert not alive(stuck)


def test_a_crash_loop_makes_the_supervisor_give_up():
    # Every worker process exits in its after-fork callback.
    server = m0test.Server(config("prefork_fork_exit:app", "inline"), "--set", "server.workers=2", env=VENV)
    with pytest.raises(RuntimeError, match="exited with 1"):
        server.start()
    output = server.output()
    assert "exited with code 3" in output
    assert "keep dying at start: 5 times in a row" in output and "giving up" in output
    m0test.finish_servers([server])


def test_a_thread_started_before_the_fork_is_refused():
    server = m0test.Server(config("prefork_thread_app:app", "inline"), "--set", "server.workers=2", env=VENV)
    with pytest.raises(RuntimeError, match="exited with 1"):
        server.start()
    assert "thread(s) already run in this process" in server.output()
    m0test.finish_servers([server])
