"""Harness for end-to-end tests: start a real m0 on a loopback port it picks and
talk to it over real sockets.

Environment (set by ctest): M0_BUILD_DIR (where bin/m0 is), M0_SOURCE_DIR.
"""
import hashlib
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

import pytest

SOURCE_DIR = os.environ.get(
    "M0_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.environ.get("M0_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
M0_BINARY = os.path.join(BUILD_DIR, "bin", "m0")

# Every deadline of the harness (a read, a wait for m0) is multiplied by this
# factor: a sanitizer build under parallel load runs several times slower than
# a Release one (scripts/test raises it for the ASan run).
TIMEOUT_SCALE = float(os.environ.get("M0_TEST_TIMEOUT_SCALE", "1"))


def scaled(seconds):
    """`seconds` of wall time as this run's deadline."""
    return seconds * TIMEOUT_SCALE


LISTENING = re.compile(r"listening on ((?:\S+:\d+ ?)+)")
WORKER_PROCESSES = re.compile(r"supervisor: (\d+) worker processes")
WORKER_PROCESS_READY = re.compile(r"listening on .*\(worker process (\d+) of \d+\)")


class Server:
    """One m0 process. `config` is a path to a YAML file or YAML text.

    m0 listens on 127.0.0.1:0 and the harness reads the ports it bound from
    its "listening on" log line: a port picked by the test and released
    before m0 binds it could be taken by another test in between.
    """

    def __init__(self, config, *args, threads=1, env=None, cwd=None, ready_timeout=20.0, launcher=(), pass_fds=(),
                 program=None):
        self.port = None
        self.ports = []
        self.args = list(args)
        self.threads = threads
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd or SOURCE_DIR
        self.ready_timeout = ready_timeout
        # A command that execs m0 (its arguments follow), and fds it inherits:
        # a socket-activation launcher, say.
        self.launcher = list(launcher)
        self.pass_fds = tuple(pass_fds)
        # The m0 command: the source build's binary, or another one (the
        # wheel's `m0` or `python -m m0` in a venv).
        self.program = list(program or [M0_BINARY])
        self.proc = None
        self.signalled = []
        self._tmp = None
        if config is not None and ("\n" in config or not os.path.exists(config)):
            self._tmp = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
            self._tmp.write(config)
            self._tmp.close()
            self.config_path = self._tmp.name
        else:
            self.config_path = config
        self.log_path = tempfile.NamedTemporaryFile(suffix=".log", delete=False).name

    def command(self):
        cmd = self.launcher + self.program
        if self.config_path:
            cmd += ["--config", self.config_path]
        cmd += ["--listen", "127.0.0.1:0"]
        if self.threads is not None:
            cmd += ["--threads", str(self.threads)]
        return cmd + self.args

    def start(self):
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     env=self.env, cwd=self.cwd, start_new_session=True, pass_fds=self.pass_fds)
        listening = self.wait_for_log(LISTENING, timeout=self.ready_timeout, what="m0 to listen")
        self.ports = [int(endpoint.rsplit(":", 1)[1]) for endpoint in listening.group(1).split()]
        self.port = self.ports[0]
        processes = WORKER_PROCESSES.search(self.output())
        if processes:
            # A supervisor names the ports before its worker processes bind
            # them: ready once each worker process says it listens.
            count = int(processes.group(1))
            self.wait_until(lambda: len(set(WORKER_PROCESS_READY.findall(self.output()))) == count,
                            timeout=self.ready_timeout, what=f"{count} worker processes to listen")
        return self

    def wait_until(self, condition, timeout=10.0, what="a condition"):
        """Polls `condition` until it holds (returns its value); fails if m0
        exits first or after `timeout`."""
        timeout = scaled(timeout)
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if self.proc.poll() is not None:
                raise RuntimeError(f"m0 exited with {self.proc.returncode} while waiting for {what}:\n"
                                   f"{self.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout}s waiting for {what}:\n{self.output()}")
            time.sleep(0.02)

    def wait_for_log(self, pattern, count=1, timeout=10.0, what=None):
        """Waits until m0's log holds `pattern` (text or compiled regex) `count`
        times; returns the last match (a re.Match for a regex)."""
        regex = pattern if isinstance(pattern, re.Pattern) else re.compile(re.escape(pattern))

        def found():
            matches = list(regex.finditer(self.output()))
            return matches[count - 1] if len(matches) >= count else None
        return self.wait_until(found, timeout=timeout, what=what or f"{regex.pattern!r} in m0's log")

    def wait_until_read(self, sock, timeout=10.0):
        """Waits until m0 has read every byte sent on `sock` (a client
        connection to it): its side of the connection has nothing left in the
        kernel's receive queue. What m0 read it handles before it turns to a
        signal, so a request sent and read is one in flight."""
        client_port = sock.getsockname()[1]
        self.wait_until(lambda: unread_bytes(sock.getpeername()[1], client_port) == 0, timeout=timeout,
                        what=f"m0 to read the request on the connection from port {client_port}")

    def output(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def send_signal(self, sig):
        self.signalled.append(sig)
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        """Sends `sig` (SIGTERM by default) unless the test already signalled
        m0 through send_signal (a second signal would mean "stop at once"),
        then waits; returns the exit code."""
        if self.proc.poll() is None and not self.signalled:
            self.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout=30.0):
        """Waits for m0 to exit; returns its exit code (SIGKILL and raise if
        it does not within `timeout`)."""
        try:
            return self.proc.wait(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def finish(self):
        """Ends m0 after a test: SIGTERM (which also stops at once a drain the
        test began), SIGKILL to the process group only if it does not exit.
        A sanitizer reports at exit, so m0 is not killed straight away.
        Returns the sanitizer report found in its log, or None."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=scaled(10))
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        return sanitizer_report(self.output())

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        if self._tmp is not None and os.path.exists(self._tmp.name):
            os.unlink(self._tmp.name)

    def connect(self, timeout=5.0):
        return socket.create_connection(("127.0.0.1", self.port), timeout=scaled(timeout))

    def open_request(self, path, port=None, timeout=10.0):
        """Sends GET `path` on a new connection and returns the socket once m0
        has read the request, before its response: a request in flight."""
        sock = socket.create_connection(("127.0.0.1", port or self.port), timeout=scaled(timeout))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode("latin-1"))
        self.wait_until_read(sock)
        return sock


# The first line of a report by AddressSanitizer, LeakSanitizer,
# ThreadSanitizer or UndefinedBehaviorSanitizer.
SANITIZER_REPORT = re.compile(r"^.*(?:ERROR: \w+Sanitizer|WARNING: ThreadSanitizer|: runtime error: ).*$",
                              re.MULTILINE)


def sanitizer_report(log):
    """The sanitizer report in `log` (from its first line on), or None."""
    found = SANITIZER_REPORT.search(log)
    return log[found.start():] if found else None


def finish_servers(servers):
    """Stops every server; fails the current test if any logged a sanitizer
    report (fixtures call it at teardown)."""
    reports = [report for report in (server.finish() for server in servers) if report]
    if reports:
        pytest.fail("m0 logged a sanitizer report:\n" + "\n".join(reports), pytrace=False)


TCP_ESTABLISHED = "01"  # the state column of /proc/net/tcp


def _tcp_row(local_port, remote_port):
    """(state, tx_queue, rx_queue) of the loopback socket 127.0.0.1:local_port
    connected to 127.0.0.1:remote_port, from /proc/net/tcp; None if there is
    no such socket."""
    loopback = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it (host order, hex)
    local, remote = f"{loopback}:{local_port:04X}", f"{loopback}:{remote_port:04X}"
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                tx, rx = fields[4].split(":")
                return fields[3], int(tx, 16), int(rx, 16)
    return None


def server_end(server_port, client_port):
    """(state, bytes waiting to be read) of the server's end of the loopback
    connection 127.0.0.1:client_port → 127.0.0.1:server_port; None once
    there is no such socket."""
    row = _tcp_row(server_port, client_port)
    return (row[0], row[2]) if row else None


def unread_bytes(server_port, client_port):
    """Bytes m0 has not read yet on that connection (None: no connection)."""
    end = server_end(server_port, client_port)
    return end[1] if end else None


def unsent_bytes(client_port, server_port):
    """Bytes the client's end of that connection has queued and the server
    has not taken yet (0: no connection)."""
    row = _tcp_row(client_port, server_port)
    return row[1] if row else 0


def backed_up_bytes(server_port, client_port):
    """What the client wrote and m0 has not read, in both kernels' buffers:
    m0's unread bytes and the client's unsent ones. How much the receiving
    end alone holds depends on its window, which the kernel sizes from how
    fast the reader read before it stopped (58 KiB was seen after a reader
    stopped early); the sum grows on with every byte the client writes."""
    return (unread_bytes(server_port, client_port) or 0) + unsent_bytes(client_port, server_port)


def rss_kib(pid, field="VmRSS"):
    """Resident memory of process `pid` in KiB, from /proc/<pid>/status
    (field "VmHWM": its peak so far)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def rss_env():
    """Environment for an m0 whose resident memory a test measures: under
    AddressSanitizer, whose quarantine of freed memory (256 MiB by default)
    would count as growth, a small quarantine."""
    if os.environ.get("M0_SANITIZE") != "address":
        return {}
    return {"ASAN_OPTIONS": ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=8"]))}


def send_numbered_mib(sock, total):
    """Sends `total` bytes (a multiple of 1 MiB) on `sock`, each MiB random
    but for its index in front, so that a lost or repeated MiB changes the
    hash; returns the SHA-256 hex digest of what was sent."""
    block = os.urandom(1024 * 1024)
    digest = hashlib.sha256()
    for i in range(total // len(block)):
        piece = i.to_bytes(8, "little") + block[8:]
        digest.update(piece)
        sock.sendall(piece)
    return digest.hexdigest()


def cpu_list(text):
    """The CPUs of a /proc list such as "0-2,5" as a set."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def thread_affinities(pid):
    """{thread name: set of CPUs it may run on} for the threads of `pid`."""
    affinities = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except (FileNotFoundError, ProcessLookupError):
            continue  # a short-lived thread (an app's, say) ended after the listing
        affinities[fields["Name"].strip()] = cpu_list(fields["Cpus_allowed_list"].strip())
    return affinities


def run_m0(*args, timeout=30, env=None, cwd=None, program=None):
    """Runs m0 (`program`, a command: the source build's binary by default)
    to completion (e.g. --check, plugins); returns CompletedProcess."""
    return subprocess.run([*(program or [M0_BINARY]), *args], capture_output=True, text=True, timeout=scaled(timeout),
                          env=dict(os.environ, **(env or {})), cwd=cwd or SOURCE_DIR)


def recv_until_closed(sock, timeout=5.0):
    """Everything m0 sends until it closes the connection (FIN or reset).
    Raises socket.timeout if it keeps the connection open: a hung connection
    is not a closed one."""
    sock.settimeout(scaled(timeout))
    chunks = []
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


class RawResponse:
    def __init__(self, status, reason, headers, body, version):
        self.status, self.reason, self.headers, self.body, self.version = status, reason, headers, body, version

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class ResponseReader:
    """Reads HTTP/1.1 responses one by one from a socket (for keep-alive and
    pipelining tests). `head_only` for responses to HEAD."""

    def __init__(self, sock, timeout=5.0):
        self.sock = sock
        self.sock.settimeout(scaled(timeout))
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def _read_line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read(self, head_only=False):
        status_line = self._read_line().decode("latin-1")
        version, status, reason = (status_line.split(" ", 2) + [""])[:3]
        headers = []
        while True:
            line = self._read_line()
            if not line:
                break
            k, v = line.decode("latin-1").split(":", 1)
            headers.append((k.strip(), v.strip()))
        resp = RawResponse(int(status), reason, headers, b"", version)
        code = int(status)
        if head_only or code in (204, 304) or 100 <= code < 200:
            return resp
        te = resp.header("Transfer-Encoding")
        cl = resp.header("Content-Length")
        if te and "chunked" in te.lower():
            body = b""
            while True:
                size = int(self._read_line().split(b";")[0], 16)
                if size == 0:
                    while self._read_line():
                        pass
                    break
                body += self._read_exact(size)
                self._read_exact(2)
            resp.body = body
        elif cl is not None:
            resp.body = self._read_exact(int(cl))
        else:
            # Close-delimited: only the close ends the body; a connection
            # that stays open raises socket.timeout (the body has no end).
            try:
                while True:
                    self._fill()
            except (EOFError, ConnectionResetError):
                pass
            resp.body, self.buf = self.buf, b""
        return resp


def cookies_of(resp):
    """{name: value} of the cookies a response sets."""
    jar = {}
    for k, v in resp.headers:
        if k.lower() == "set-cookie":
            name, _, rest = v.partition("=")
            jar[name.strip()] = rest.split(";", 1)[0]
    return jar


def cookie_header(jar):
    """A Cookie header's value sending back the cookies of `jar`."""
    return "; ".join(f"{k}={v}" for k, v in jar.items())


def request(port, method="GET", path="/", headers=None, body=b"", timeout=5.0):
    """One request on a fresh connection; returns RawResponse."""
    hdrs = {"Host": "127.0.0.1", "Connection": "close"}
    hdrs.update(headers or {})
    if body and "Content-Length" not in hdrs and "Transfer-Encoding" not in hdrs:
        hdrs["Content-Length"] = str(len(body))
    raw = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=scaled(timeout)) as s:
        s.sendall(raw.encode("latin-1") + body)
        return ResponseReader(s, timeout).read(head_only=(method == "HEAD"))
