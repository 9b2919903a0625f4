"""log.level: the least severe event logged. Each line names the process
(m0[pid]) and, for a connection's events, its reactor and client address."""
import os
import re
import subprocess

import m0test

CONFIG = """
frontend: {type: http, routes: [{path: /hello, body: hi}]}
log: {level: %s}
"""
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z m0\[(\d+)\] (debug|info|warning|error): ", re.MULTILINE)


def listening_port(pid):
    """The port m0 (pid) listens on, from /proc (None while it does not yet):
    below info m0 does not log it."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # state LISTEN
                return int(fields[1].split(":")[1], 16)
    return None


def run_with_level(level, requests):
    """Starts m0 at `level`, sends `requests` (raw bytes, each on its own
    connection, each answered), stops it; returns its whole log."""
    server = m0test.Server(CONFIG % level)
    server._log = open(server.log_path, "ab")
    server.proc = subprocess.Popen(server.command(), stdout=server._log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        server.port = server.wait_until(lambda: listening_port(server.proc.pid), what="m0 to listen")
        for raw in requests:
            with server.connect() as sock:
                sock.sendall(raw)
                assert m0test.recv_until_closed(sock).startswith(b"HTTP/1.1 ")
        assert server.stop() == 0
        return server.output()
    finally:
        report = server.finish()
        assert report is None, report


HELLO = b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
BROKEN = b"BROKEN\r\n\r\n"


def test_info_names_process_reactor_and_client_of_a_rejection():
    out = run_with_level("info", [HELLO, BROKEN])
    lines = out.splitlines()
    rejected = [l for l in lines if "rejected request" in l]
    assert len(rejected) == 1, out
    assert re.search(r"m0\[\d+\] info: http: reactor 0: 127\.0\.0\.1:\d+: rejected request: 400 Bad Request", rejected[0])
    assert "connection opened" not in out
    assert {m.group(2) for m in LINE.finditer(out)} <= {"info", "warning", "error"}


def test_warning_leaves_out_info_events():
    out = run_with_level("warning", [HELLO, BROKEN])
    assert "rejected request" not in out
    assert "listening on" not in out and "stopped" not in out
    assert not any(m.group(2) in ("info", "debug") for m in LINE.finditer(out)), out


def test_debug_logs_each_connection_with_its_reactor_and_client():
    out = run_with_level("debug", [HELLO, HELLO])
    opened = re.findall(r"m0\[(\d+)\] debug: http: reactor 0: 127\.0\.0\.1:(\d+): connection opened", out)
    closed = re.findall(r"m0\[(\d+)\] debug: http: reactor 0: 127\.0\.0\.1:(\d+): connection closed after 1 request\(s\)", out)
    assert len(opened) == 2 and len(closed) == 2, out
    assert {port for _, port in opened} == {port for _, port in closed}
    assert "listening on" in out  # info is above debug
