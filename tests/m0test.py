"""Harness for end-to-end tests: start a real m0 on a free loopback port and talk
to it over real sockets.

Environment (set by ctest): M0_BUILD_DIR (where bin/m0 is), M0_SOURCE_DIR.
"""
import os
import signal
import socket
import subprocess
import tempfile
import time

SOURCE_DIR = os.environ.get(
    "M0_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.environ.get("M0_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
M0_BINARY = os.path.join(BUILD_DIR, "bin", "m0")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One m0 process. `config` is a path to a YAML file or YAML text."""

    def __init__(self, config, *args, port=None, threads=1, env=None, cwd=None,
                 ready_timeout=20.0):
        self.port = port or free_port()
        self.args = list(args)
        self.threads = threads
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd or SOURCE_DIR
        self.ready_timeout = ready_timeout
        self.proc = None
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
        cmd = [M0_BINARY]
        if self.config_path:
            cmd += ["--config", self.config_path]
        cmd += ["--listen", f"127.0.0.1:{self.port}"]
        if self.threads is not None:
            cmd += ["--threads", str(self.threads)]
        return cmd + self.args

    def start(self):
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     env=self.env, cwd=self.cwd, start_new_session=True)
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"m0 exited with {self.proc.returncode} during start-up:\n{self.output()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"m0 did not listen on {self.port} within {self.ready_timeout}s:\n{self.output()}")

    def output(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        """Sends `sig` (SIGTERM by default) and waits; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

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
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)


def run_m0(*args, timeout=30, env=None, cwd=None):
    """Runs m0 to completion (e.g. --check, plugins); returns CompletedProcess."""
    return subprocess.run([M0_BINARY, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})), cwd=cwd or SOURCE_DIR)


def recv_until_closed(sock, timeout=5.0):
    sock.settimeout(timeout)
    chunks = []
    while True:
        try:
            data = sock.recv(65536)
        except socket.timeout:
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
        self.sock.settimeout(timeout)
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
            try:
                while True:
                    self._fill()
            except (EOFError, socket.timeout):
                pass
            resp.body, self.buf = self.buf, b""
        return resp


def request(port, method="GET", path="/", headers=None, body=b"", timeout=5.0):
    """One request on a fresh connection; returns RawResponse."""
    hdrs = {"Host": "127.0.0.1", "Connection": "close"}
    hdrs.update(headers or {})
    if body and "Content-Length" not in hdrs and "Transfer-Encoding" not in hdrs:
        hdrs["Content-Length"] = str(len(body))
    raw = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw.encode("latin-1") + body)
        return ResponseReader(s, timeout).read(head_only=(method == "HEAD"))
