"""Every signal does something documented and logs a line; none kills m0
unannounced. With server.workers > 1: SIGTTIN/SIGTTOU add and remove a
worker process; SIGUSR2 is ignored."""
import os
import re
import signal

import m0test
from prefork_support import alive, wait_for_children

HELLO = os.path.join(m0test.SOURCE_DIR, "configs", "hello.yaml")


def hello_ok(server):
    response = m0test.request(server.port, path="/hello")
    return response.status == 200 and response.body == b"Hello, World!"


def test_sigttin_adds_a_worker_process_and_sigttou_removes_one(m0_server):
    server = m0_server(HELLO, "--workers", "2")
    supervisor = server.proc.pid
    before = wait_for_children(supervisor, 2)
    os.kill(server.proc.pid, signal.SIGTTIN)
    server.wait_for_log("supervisor: received SIGTTIN: adding worker process 2 (now 3)")
    server.wait_for_log(re.compile(r"listening on .*\(worker process 2 of 3\)"))
    grown = wait_for_children(supervisor, 3)
    added = (set(grown) - set(before)).pop()
    os.kill(server.proc.pid, signal.SIGTTOU)
    server.wait_for_log(f"supervisor: received SIGTTOU: removing worker process 2 (now 2), draining pid {added}")
    server.wait_for_log(f"supervisor: previous worker process (pid {added}) exited with code 0")
    assert sorted(wait_for_children(supervisor, 2)) == sorted(before)
    # Down to one, and no further.
    os.kill(server.proc.pid, signal.SIGTTOU)
    server.wait_for_log("supervisor: received SIGTTOU: removing worker process 1 (now 1)")
    wait_for_children(supervisor, 1)
    os.kill(server.proc.pid, signal.SIGTTOU)
    server.wait_for_log("supervisor: received SIGTTOU: ignored, one worker process is the fewest")
    assert len(wait_for_children(supervisor, 1)) == 1
    assert all(hello_ok(server) for _ in range(10))
    assert server.stop() == 0


def test_sigusr2_and_signals_sent_to_a_worker_process_are_logged_and_ignored(m0_server):
    server = m0_server(HELLO, "--workers", "2")
    workers = wait_for_children(server.proc.pid, 2)
    os.kill(server.proc.pid, signal.SIGUSR2)
    server.wait_for_log("supervisor: received SIGUSR2: ignored (SIGHUP reloads")
    os.kill(workers[0], signal.SIGHUP)
    server.wait_for_log(f"m0[{workers[0]}] info: received SIGHUP: ignored by a worker process; send it to the "
                        f"supervisor (pid {server.proc.pid})")
    assert alive(workers[0]) and hello_ok(server)
    assert sorted(wait_for_children(server.proc.pid, 2)) == sorted(workers)
    assert server.stop() == 0


def test_one_process_logs_and_ignores_sighup_sigusr2_sigttin_sigttou(m0_server):
    server = m0_server(HELLO)
    for sig, name in ((signal.SIGHUP, "SIGHUP"), (signal.SIGTTIN, "SIGTTIN"), (signal.SIGTTOU, "SIGTTOU")):
        os.kill(server.proc.pid, sig)
        server.wait_for_log(f"received {name}: ignored; reloading and resizing need a supervisor (server.workers > 1)")
    os.kill(server.proc.pid, signal.SIGUSR2)
    server.wait_for_log("received SIGUSR2: ignored")
    assert hello_ok(server)
    assert server.stop() == 0
