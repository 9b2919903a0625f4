"""server.workers > 1: a supervisor and that many serving processes (prefork),
with the native http frontend."""
import os
import re
import signal
import subprocess
import threading

import pytest

import m0test
from prefork_support import alive, state, wait_for_children, wait_until

# A worker process's own line (the supervisor's says "supervisor: received").
WORKER_DRAINING = re.compile(r"info: received SIGTERM, draining")
HELLO = os.path.join(m0test.SOURCE_DIR, "configs", "hello.yaml")
WITH_SLOW_ROUTE = (
    "frontend:\n"
    "  type: http\n"
    "  routes:\n"
    "    - {path: /hello, body: 'Hello, World!'}\n"
    "    - {path: /slow, delay: 1500ms, body: late}\n"
)


def comm(pid):
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def test_workers_are_processes_that_all_serve(m0_server):
    server = m0_server(HELLO, "--set", "server.workers=3")
    pids = wait_for_children(server.proc.pid, 3)
    assert comm(server.proc.pid) == "m0-supervisor"
    # A new process names itself right after the fork.
    wait_until(lambda: all(comm(pid) == "m0-worker-proc" for pid in pids), what="the worker processes' names")
    for _ in range(30):
        response = m0test.request(server.port, path="/hello")
        assert response.status == 200 and response.body == b"Hello, World!"
    # Every process says which one it is.
    wait_until(lambda: all(f"m0[{pid}] info: m0 " in server.output() for pid in pids), what="a log line per process")


def test_a_killed_worker_process_is_respawned_and_no_other_request_fails(m0_server):
    server = m0_server(HELLO, "--set", "server.workers=3")
    before = wait_for_children(server.proc.pid, 3)
    # Each failure is recorded with the phase it happened in. One request at
    # a time: the only one a SIGKILL may take down is the one the killed
    # process holds (accepted or in its accept queue), which the kernel
    # closes (EOF) or resets unanswered.
    phase, failures, served = ["before the kill"], [], [0]
    stop = threading.Event()

    def client():
        # One attempt per request: a reset or unanswered connection is a
        # failed request, not something to retry.
        while not stop.is_set():
            try:
                response = m0test.request(server.port, path="/hello")
            except (OSError, EOFError) as e:
                failures.append((phase[0], repr(e)))
                continue
            if response.status != 200:
                failures.append((phase[0], response.status))
            served[0] += 1

    thread = threading.Thread(target=client)
    thread.start()
    try:
        wait_until(lambda: served[0] > 0, what="the client's first response")
        victim = before[1]
        phase[0] = "at the kill"
        os.kill(victim, signal.SIGKILL)
        after = wait_for_children(server.proc.pid, 3, without=[victim])
        served_at_respawn = served[0]
        phase[0] = "after the respawn"
        wait_until(lambda: served[0] > served_at_respawn + 20, what="requests after the respawn")
    finally:
        stop.set()
        thread.join(30)
    at_kill = [f for f in failures if f[0] == "at the kill"]
    assert len(at_kill) <= 1 and all(f[1].startswith(("ConnectionResetError", "EOFError")) for f in at_kill), failures
    assert len(failures) == len(at_kill), failures
    assert len(set(after) - set(before)) == 1
    assert f"(pid {victim}) was killed by SIGKILL" in server.output()
    assert server.stop() == 0


def test_sigterm_drains_every_process_and_exits_0(m0_server):
    server = m0_server(WITH_SLOW_ROUTE, "--set", "server.workers=3")
    pids = wait_for_children(server.proc.pid, 3)
    with server.open_request("/slow") as s:
        server.send_signal(signal.SIGTERM)
        response = m0test.ResponseReader(s, timeout=15).read()
    assert response.status == 200 and response.body == b"late"
    assert server.wait(timeout=20) == 0
    assert not [pid for pid in pids if alive(pid)]
    assert "supervisor: every worker process has stopped" in server.output()


def test_sigint_to_the_process_group_is_one_drain_not_a_hard_stop(m0_server):
    # Ctrl-C at a terminal signals every process of the group: each worker
    # process gets SIGINT from the terminal and again from the supervisor.
    server = m0_server(WITH_SLOW_ROUTE, "--set", "server.workers=2")
    with server.open_request("/slow") as s:
        os.killpg(server.proc.pid, signal.SIGINT)
        response = m0test.ResponseReader(s, timeout=15).read()
    assert response.status == 200 and response.body == b"late"
    assert server.wait(timeout=20) == 0
    assert "stopping now" not in server.output()


def test_a_second_sigterm_stops_at_once(m0_server):
    server = m0_server(WITH_SLOW_ROUTE.replace("1500ms", "20s"), "--set", "server.workers=2")
    with server.open_request("/slow") as s:
        server.send_signal(signal.SIGTERM)
        # Each worker process has taken the forwarded SIGTERM before the
        # second one: two pending SIGTERMs would be delivered as one.
        server.wait_for_log(WORKER_DRAINING, count=2)
        server.send_signal(signal.SIGTERM)
        # Well inside the 20 s the request would take.
        assert server.wait(timeout=10) == 0
        assert m0test.recv_until_closed(s) == b""  # cut, not answered
    # The idle process may have finished its drain already; the busy one is
    # told to stop at once.
    assert "worker process(es) at once" in server.output()
    assert "second signal: stopping now" in server.output()


def test_sigquit_to_the_supervisor_stops_at_once(m0_server):
    server = m0_server(WITH_SLOW_ROUTE.replace("1500ms", "20s"), "--set", "server.workers=2")
    with server.open_request("/slow") as s:
        server.send_signal(signal.SIGQUIT)
        # Well inside the 20 s the request would take.
        assert server.wait(timeout=10) == 0
        assert m0test.recv_until_closed(s) == b""  # cut, not answered
    assert "supervisor: received SIGQUIT, stopping 2 worker process(es) at once" in server.output()


@pytest.mark.parametrize("sig, deadline", [(signal.SIGTERM, "the drain timeout (1 s) and 5 s more"),
                                           (signal.SIGQUIT, "5 s")])
def test_the_supervisor_kills_a_worker_process_that_does_not_stop(m0_server, sig, deadline):
    # A stopped process (SIGSTOP, as under a debugger) cannot act on the
    # signal the supervisor forwards: past its deadline the supervisor kills
    # it, says so, and still exits 0 once every process is gone.
    server = m0_server(HELLO, "--set", "server.workers=2", "--set", "server.drain_timeout=1s")
    stuck, other = wait_for_children(server.proc.pid, 2)
    os.kill(stuck, signal.SIGSTOP)
    wait_until(lambda: state(stuck) == "T", what="the worker process to stop")
    server.send_signal(sig)
    # The other process stops by itself, long before the deadline.
    server.wait_for_log(re.compile(rf"supervisor: worker process \d \(pid {other}\) exited with code 0"))
    assert alive(stuck), f"the stopped process must outlive {deadline}:\n{server.output()}"
    killed = server.wait_for_log(re.compile(rf"warning: supervisor: worker process \d \(pid {stuck}\) did not stop "
                                            r"in time; killing it"), timeout=30, what=f"the kill after {deadline}")
    assert server.wait(timeout=10) == 0
    assert not alive(stuck)
    # Nothing about the killed process follows the kill but the last line.
    after = server.output()[killed.end():]
    assert "supervisor: every worker process has stopped" in after and "respawning" not in after


def test_a_worker_process_drains_when_its_supervisor_dies(m0_server):
    server = m0_server(WITH_SLOW_ROUTE, "--set", "server.workers=2")
    pids = wait_for_children(server.proc.pid, 2)
    with server.open_request("/slow") as s:
        os.kill(server.proc.pid, signal.SIGKILL)
        response = m0test.ResponseReader(s, timeout=15).read()
    assert response.status == 200 and response.body == b"late"
    wait_until(lambda: not [pid for pid in pids if alive(pid)], what="the orphaned worker processes to exit")


def test_worker_processes_stop_when_the_supervisor_is_killed(m0_server):
    server = m0_server(HELLO, "--set", "server.workers=2")
    pids = wait_for_children(server.proc.pid, 2)
    os.kill(server.proc.pid, signal.SIGKILL)
    server.wait(timeout=10)
    wait_until(lambda: not [pid for pid in pids if alive(pid)], what="the orphaned worker processes to exit")


def test_a_port_0_is_one_port_for_every_process(tmp_path):
    # The supervisor resolves port 0 once; every process binds that port.
    log = tmp_path / "m0.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([m0test.M0_BINARY, "--config", HELLO, "--listen", "127.0.0.1:0", "--threads", "1",
                                 "--set", "server.workers=2"], stdout=out, stderr=subprocess.STDOUT,
                                cwd=m0test.SOURCE_DIR, start_new_session=True)
    try:
        lines = wait_until(lambda: (lambda found: found if len(found) == 2 else None)(
            [line for line in log.read_text().splitlines() if "(worker process" in line]), what="2 processes serving")
        ports = {line.split("listening on 127.0.0.1:")[1].split()[0] for line in lines}
        assert len(ports) == 1 and ports != {"0"}
        assert m0test.request(int(ports.pop()), path="/hello").status == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_check_prints_workers():
    result = m0test.run_m0("--check", "--config", HELLO, "--set", "server.workers=4")
    assert result.returncode == 0, result.stderr
    assert "workers: 4" in result.stdout
    result = m0test.run_m0("--check", "--config", HELLO)
    assert "workers: 1" in result.stdout


def test_workers_out_of_range_are_a_config_error():
    for value in ("0", "257", "two"):
        result = m0test.run_m0("--config", HELLO, "--set", f"server.workers={value}")
        assert result.returncode == 2
        assert "server.workers: expected an integer in 1..256" in result.stderr


def test_pin_cores_gives_each_worker_process_its_own_cores(m0_server):
    # Thread i of process p runs on core (p × threads + i) mod CPUs.
    server = m0_server(HELLO, "--set", "server.workers=2", threads=1)
    index_of = {int(pid): int(index) for pid, index in
                re.findall(r"m0\[(\d+)\] info: .*listening on .*\(worker process (\d+) of 2\)", server.output())}
    assert len(index_of) == 2, server.output()
    for pid, index in index_of.items():
        assert m0test.thread_affinities(pid)["m0-reactor-0"] == {index % os.cpu_count()}
