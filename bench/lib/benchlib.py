"""Shared helpers for the scripts in bench/: start and stop peers fairly, drive
wrk, print tables.

Peers are started in a session of their own (setsid) with SIGINT and SIGQUIT
reset to their defaults (a background shell may hand them down ignored), and
stopped by process group, never by name.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

# Every arm gets the same request headers: header parsing is part of the cost.
BROWSER_HEADERS = [
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
    ("Accept-Language", "en-US,en;q=0.5"),
]

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=1.0):
    """(status, body) of a GET on a fresh connection, or None if it fails."""
    req = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(req)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None
    return status, body


class Peer:
    """One server under test, in its own session and process group."""

    def __init__(self, name, cmd, port, env=None, cwd=None, log_dir=None):
        self.name, self.cmd, self.port = name, list(cmd), port
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="bench-")
        self.log_path = os.path.join(self.log_dir, f"{name}.log")
        self.proc = None

    def start(self, ready_path="/", ready_timeout=20.0):
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(["env", "--default-signal=INT,QUIT", *self.cmd], stdout=log,
                                     stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd,
                                     start_new_session=True)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log()}")
            if http_get(self.port, ready_path, timeout=0.5) is not None:
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} not answering on port {self.port}:\n{self.log()}")

    def cpu_seconds(self):
        return group_cpu_seconds(self.proc.pid)

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-4000:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, grace=10.0):
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = self.proc.pid  # session leader: pid == pgid
        try:
            os.killpg(pgid, sig)
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass


def group_cpu_seconds(pgid):
    """User+system CPU seconds used so far by the live processes of a process
    group (a peer's master and its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command: state(0) ppid(1) pgrp(2) ... utime(11) stime(12)
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / tick


class WrkResult:
    def __init__(self, rps, requests, errors, non_2xx, latency_avg, raw):
        self.rps, self.requests, self.errors, self.non_2xx = rps, requests, errors, non_2xx
        self.latency_avg, self.raw = latency_avg, raw
        self.server_cpu_us_per_request = None  # filled in by callers that measure it


def run_wrk(url, connections, duration, threads=1, headers=BROWSER_HEADERS, timeout="5s"):
    """Runs wrk once and returns a WrkResult (requests/s, socket errors, non-2xx)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("wrk not found (Debian package `wrk`)")
    threads = max(1, min(threads, connections))
    cmd = [wrk, f"-t{threads}", f"-c{connections}", f"-d{duration}", f"--timeout={timeout}"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = sum(int(x) for x in m.groups()) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    non_2xx = int(m.group(1)) if m else 0
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    m = re.search(r"Latency\s+(\S+)", out)
    return WrkResult(rps, requests, errors, non_2xx, m.group(1) if m else "?", out)


def run_wrk_measured(peer, url, connections, duration, threads=1, headers=BROWSER_HEADERS):
    """run_wrk, plus the server's CPU time per request (µs) over the run: on a
    shared machine where wrk may be the bottleneck, this says which server
    does the same work for less."""
    before = peer.cpu_seconds()
    r = run_wrk(url, connections, duration, threads, headers)
    used = peer.cpu_seconds() - before
    if r.requests:
        r.server_cpu_us_per_request = used * 1e6 / r.requests
    return r


def print_table(header, rows):
    """A Markdown table, columns padded for the terminal."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
    print(fmt(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(fmt(r))
