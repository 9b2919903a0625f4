"""server.pid_file: the pid to signal (the supervisor's with workers > 1),
written once m0 listens, removed at exit, and never taken from a live m0."""
import os

import m0test
from prefork_support import wait_for_children

HELLO = os.path.join(m0test.SOURCE_DIR, "configs", "hello.yaml")


def read(path):
    with open(path) as f:
        return f.read()


def test_the_supervisor_writes_its_pid_and_removes_it_at_exit(m0_server, tmp_path):
    pid_file = tmp_path / "m0.pid"
    server = m0_server(HELLO, "--workers", "2", "--set", f"server.pid_file={pid_file}")
    wait_for_children(server.proc.pid, 2)
    assert read(pid_file) == f"{server.proc.pid}\n"
    assert server.stop() == 0
    assert not pid_file.exists()


def test_a_second_m0_with_the_same_pid_file_is_refused(m0_server, tmp_path):
    pid_file = tmp_path / "m0.pid"
    first = m0_server(HELLO, "--set", f"server.pid_file={pid_file}")
    first.wait_until(pid_file.exists, what="the pid file")
    result = m0test.run_m0("--config", HELLO, "--listen", "127.0.0.1:0", "--set", f"server.pid_file={pid_file}")
    assert result.returncode == 1
    assert f"server.pid_file {pid_file} names pid {first.proc.pid}, a running m0" in result.stderr, result.stderr
    # The first one's file is untouched and it serves on.
    assert read(pid_file) == f"{first.proc.pid}\n"
    assert m0test.request(first.port, path="/hello").status == 200
    assert first.stop() == 0
    assert not pid_file.exists()


def test_a_stale_pid_file_is_replaced(m0_server, tmp_path):
    pid_file = tmp_path / "m0.pid"
    # A pid no m0 runs as: this test's own (python) process.
    pid_file.write_text(f"{os.getpid()}\n")
    server = m0_server(HELLO, "--set", f"server.pid_file={pid_file}")
    server.wait_until(lambda: read(pid_file) == f"{server.proc.pid}\n", what="the pid file rewritten")
    assert server.stop() == 0
    assert not pid_file.exists()
