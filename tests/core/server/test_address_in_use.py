"""An address another socket listens on is refused at start-up (exit 1, the
address named), even when that socket set SO_REUSEPORT, which would let the
kernel share the port and split the traffic; m0's own threads and worker
processes still share it."""
import os
import signal
import socket
import subprocess

import m0test
from prefork_support import wait_for_children, wait_until

HELLO = os.path.join(m0test.SOURCE_DIR, "configs", "hello.yaml")


def reuseport_listener():
    """A listening loopback socket with SO_REUSEPORT, as Granian sets it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def start_outcome(tmp_path, port, *args):
    """Starts m0 on `port` and waits for whichever comes first: its exit
    (returns the exit code and the output) or its "listening on" line (it is
    then stopped, and the result is "serving")."""
    log = tmp_path / f"m0-{port}-{len(list(tmp_path.iterdir()))}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([m0test.M0_BINARY, "--config", HELLO, "--listen", f"127.0.0.1:{port}",
                                 "--threads", "2", *args], stdout=out, stderr=subprocess.STDOUT,
                                cwd=m0test.SOURCE_DIR, start_new_session=True)
    try:
        wait_until(lambda: proc.poll() is not None or "listening on" in log.read_text(),
                   what="m0 to exit or to listen")
        if proc.poll() is None:
            return "serving", log.read_text()
        return proc.returncode, log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def assert_refused(outcome, port):
    code, output = outcome
    assert code == 1, output
    assert f"cannot listen on 127.0.0.1:{port}" in output and "Address already in use" in output, output


def test_a_second_m0_on_the_same_address_is_refused(m0_server, tmp_path):
    first = m0_server(HELLO)
    assert_refused(start_outcome(tmp_path, first.port), first.port)
    # The first one kept the whole port.
    assert m0test.request(first.port, path="/hello").status == 200


def test_a_foreign_reuseport_listener_is_refused(tmp_path):
    with reuseport_listener() as other:
        port = other.getsockname()[1]
        assert_refused(start_outcome(tmp_path, port), port)
        assert_refused(start_outcome(tmp_path, port, "--set", "server.workers=2"), port)


def test_a_second_m0_next_to_worker_processes_is_refused(m0_server, tmp_path):
    first = m0_server(HELLO, "--set", "server.workers=2")
    wait_for_children(first.proc.pid, 2)
    assert_refused(start_outcome(tmp_path, first.port), first.port)
    assert_refused(start_outcome(tmp_path, first.port, "--set", "server.workers=2"), first.port)


def test_worker_processes_and_threads_share_their_own_port(m0_server):
    server = m0_server(HELLO, "--set", "server.workers=2", threads=2)
    pids = wait_for_children(server.proc.pid, 2)
    wait_until(lambda: all(f"m0[{pid}] info: m0 " in server.output() for pid in pids),
               what="both worker processes listening")
    for _ in range(10):
        assert m0test.request(server.port, path="/hello").status == 200
    assert set(wait_for_children(server.proc.pid, 2)) == set(pids)  # none exited and was replaced
    assert "cannot" not in server.output()
    assert server.stop() == 0


def test_the_address_is_free_again_right_after_a_stop(m0_server, tmp_path):
    # The connection the server closed stays in TIME_WAIT on its port; that
    # is no listener, and a restart must not be refused for it.
    first = m0_server(HELLO)
    with first.connect() as s:
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        assert b"Hello, World!" in m0test.recv_until_closed(s)
    assert first.stop() == 0
    code, output = start_outcome(tmp_path, first.port)
    assert code == "serving", output
