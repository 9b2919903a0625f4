"""systemd integration over the real protocols: readiness and state through
a unix datagram socket named by NOTIFY_SOCKET (sd_notify), and listening
sockets passed as LISTEN_FDS (socket activation)."""
import os
import re
import signal
import socket
import subprocess
import sys

import pytest

import m0test
from prefork_support import wait_for_children

HELLO = os.path.join(m0test.SOURCE_DIR, "configs", "hello.yaml")
LAUNCHER = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "socket_activate.py")]


class Notifications:
    """The receiving end of NOTIFY_SOCKET: a path, or an abstract name."""

    def __init__(self, tmp_path, abstract):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = f"m0-test-notify-{os.getpid()}-{id(self)}"
            self.sock.bind("\0" + name)
            self.address = "@" + name
        else:
            self.address = str(tmp_path / "notify.sock")
            self.sock.bind(self.address)
        self.sock.settimeout(m0test.scaled(20))

    def next(self):
        """The next datagram as a dict of its KEY=value lines."""
        data = self.sock.recv(4096).decode()
        return dict(line.split("=", 1) for line in data.splitlines() if line)

    def close(self):
        self.sock.close()


@pytest.fixture(params=["path", "abstract"])
def notifications(request, tmp_path):
    n = Notifications(tmp_path, request.param == "abstract")
    yield n
    n.close()


def test_supervisor_reports_ready_reloading_and_stopping(m0_server, notifications):
    server = m0_server(HELLO, "--workers", "2", env={"NOTIFY_SOCKET": notifications.address})
    ready = notifications.next()
    assert ready["READY"] == "1" and ready["MAINPID"] == str(server.proc.pid)
    # Only once both worker processes serve.
    assert len(re.findall(r"listening on .*\(worker process \d of 2\)", server.output())) == 2
    os.kill(server.proc.pid, signal.SIGHUP)
    reloading = notifications.next()
    assert reloading["RELOADING"] == "1" and int(reloading["MONOTONIC_USEC"]) > 0
    reloaded = notifications.next()
    assert reloaded["READY"] == "1" and reloaded["MAINPID"] == str(server.proc.pid)
    assert "supervisor: reloaded: 2 new worker process(es) serve" in server.output()
    server.send_signal(signal.SIGTERM)
    assert notifications.next()["STOPPING"] == "1"
    assert server.wait() == 0


def test_one_process_reports_ready_and_stopping(m0_server, notifications):
    server = m0_server(HELLO, env={"NOTIFY_SOCKET": notifications.address})
    ready = notifications.next()
    assert ready["READY"] == "1" and ready["MAINPID"] == str(server.proc.pid)
    assert m0test.request(server.port, path="/hello").status == 200
    server.send_signal(signal.SIGTERM)
    assert notifications.next()["STOPPING"] == "1"
    assert server.wait() == 0


def listening_socket():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    return s


@pytest.mark.parametrize("scheduler", ["reactors", "balanced"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_socket_activation_serves_on_the_passed_socket(m0_server, workers, scheduler):
    with listening_socket() as listener:
        port = listener.getsockname()[1]
        # Queued before m0 even started: socket activation's promise.
        early = socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(20))
        early.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        server = m0_server(HELLO, "--workers", workers, "--scheduler", scheduler,
                           launcher=LAUNCHER + [str(listener.fileno())], pass_fds=[listener.fileno()])
        with early:
            response = m0test.ResponseReader(early, timeout=20).read()
        assert response.status == 200 and response.body == b"Hello, World!"
        assert server.port == port
        assert "listening on sockets passed by the parent process (LISTEN_FDS)" in server.output()
        if workers == "2":
            wait_for_children(server.proc.pid, 2)
        for _ in range(20):
            assert m0test.request(port, path="/hello").status == 200
        assert server.stop() == 0


def test_a_passed_socket_that_matches_no_listen_address_is_refused():
    with listening_socket() as listener:
        port = listener.getsockname()[1]
        other = port + 1 if port < 65535 else port - 1
        result = subprocess.run(
            LAUNCHER + [str(listener.fileno()), m0test.M0_BINARY, "--config", HELLO, "--listen", f"127.0.0.1:{other}"],
            capture_output=True, text=True, timeout=m0test.scaled(30), pass_fds=[listener.fileno()])
    assert result.returncode == 1
    assert f"LISTEN_FDS: the socket on 127.0.0.1:{port} (fd 3) matches no address of server.listen" in result.stderr
