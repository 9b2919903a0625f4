"""The client of bench/sse_fanout: it holds SSE streams on a real m0, counts
every event and its latency, counts the streams m0 ends, and fails the run
(exit 1, a reason on stderr) on any response or byte it does not expect; its
decoder takes bytes split anywhere."""
import os
import socket
import subprocess
import threading
import time

import pytest

import m0test
from support.wsgi_deployment import wsgi_config

CLIENT = os.path.join(m0test.BUILD_DIR, "tests", "sse_fanout_client")
APPS = os.path.join(m0test.SOURCE_DIR, "tests", "plugins", "realtime-ws", "apps")
GOOD_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


class Client:
    """The client binary, driven over its stdin/stdout protocol."""

    def __init__(self, port, path, streams, threads=1):
        self.proc = subprocess.Popen([CLIENT, "127.0.0.1", str(port), path, str(streams), "4", str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # A client that hangs must not hang the test: it is killed and the
        # read below sees its end.
        self.killer = threading.Timer(m0test.scaled(60), self.proc.kill)
        self.killer.start()

    def line(self):
        return self.proc.stdout.readline().strip()

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.line()

    def report(self):
        return {k: int(float(v)) if k != "cpu" else float(v)
                for k, v in (kv.split("=") for kv in self.ask("report").split())}

    def wait_report(self, condition, what):
        """Asks for reports until one satisfies `condition`."""
        deadline = time.monotonic() + m0test.scaled(20)
        while not condition(report := self.report()):
            assert time.monotonic() < deadline, f"no report with {what}; last {report}"
            time.sleep(0.01)
        return report

    def failure(self):
        """(exit code, stderr) once the client exits on its own."""
        code = self.proc.wait(timeout=m0test.scaled(30))
        return code, self.proc.stderr.read()

    def close(self):
        self.killer.cancel()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


@pytest.fixture
def client():
    started = []

    def start(*args, **kwargs):
        c = Client(*args, **kwargs)
        started.append(c)
        return c

    yield start
    for c in started:
        c.close()


def publish(server, seq):
    data = f"{time.monotonic_ns()} {seq}".encode()
    assert m0test.request(server.port, "POST", "/publish?channel=bench", body=data).status == 204


def test_counts_every_event_of_every_stream_and_the_streams_m0_ends(m0_server, client):
    server = m0_server(wsgi_config("hold_apps:app", APPS, realtime="{}"))
    c = client(server.port, "/hold?mode=sse&channels=bench&tag=bench", 20, threads=2)
    assert c.line() == "held 20"
    assert c.ask("reset 1") == "ok"
    publish(server, 0)  # numbered below the reset: not counted
    for seq in (1, 2, 3):
        publish(server, seq)
    assert c.ask(f"wait 60 {int(m0test.scaled(20000))}") == "ok"
    report = c.report()
    assert (report["events"], report["min"], report["max"], report["closed"]) == (60, 3, 3, 0)
    assert 0 < report["p50_us"] <= report["p99_us"] <= report["max_us"] < m0test.scaled(20) * 1e6
    assert report["wakes"] >= 1
    # A drain ends every SSE hold with the last chunk and closes it.
    server.stop()
    report = c.wait_report(lambda r: r["closed"] == 20, "closed=20")
    assert report["events"] == 60
    assert c.ask("reset 4") == "ok" and c.report()["events"] == 0
    c.proc.stdin.write("quit\n")
    c.proc.stdin.flush()
    assert c.proc.wait(timeout=m0test.scaled(10)) == 0


class ScriptedServer:
    """A listener that answers one connection's request with `answer`, sent
    in the pieces given: each piece only once the client has read all before
    it, so every piece is a read of its own. Then it closes the connection,
    unless `keep_open`."""

    def __init__(self, *answer, keep_open=False):
        self.answer = answer
        self.keep_open = keep_open
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.errors = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            conn, peer = self.listener.accept()
            self.conn = conn
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            for piece in self.answer:
                conn.sendall(piece)
                self.wait_read(peer[1])
            if not self.keep_open:
                conn.close()
        except Exception as e:  # reported by the test, not lost in the thread
            self.errors.append(e)

    def wait_read(self, client_port):
        """Until the client's end has nothing left to read (or is gone)."""
        deadline = time.monotonic() + m0test.scaled(20)
        while m0test.unread_bytes(client_port, self.port):
            if time.monotonic() > deadline:
                raise TimeoutError("the client did not read what was sent")
            time.sleep(0.001)

    def close(self):
        self.thread.join(timeout=m0test.scaled(30))
        self.listener.close()
        assert not self.errors, self.errors


def test_decodes_bytes_split_anywhere(client):
    now = time.monotonic_ns()
    body = (chunk(b": open\n\n") + chunk(b"event: tick\ndata: %d 7 padding xxx\n\n" % now) +
            chunk(b"data: %d 8\n" % now) + chunk(b"\n"))
    # Every byte of the body on its own, then the last chunk: the decoder
    # keeps its place inside sizes, names, numbers and CRLFs.
    server = ScriptedServer(GOOD_HEAD, *(bytes([b]) for b in body), keep_open=True)
    c = client(server.port, "/events", 1)
    assert c.line() == "held 1"
    server.close()
    report = c.report()
    assert (report["events"], report["closed"]) == (2, 0)
    assert 0 <= report["p50_us"] < m0test.scaled(60) * 1e6
    server.conn.sendall(b"0\r\n\r\n")
    server.conn.close()
    assert c.wait_report(lambda r: r["closed"] == 1, "closed=1")["events"] == 2


@pytest.mark.parametrize("answer, reason", [
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n",
     "expected 200, text/event-stream, chunked"),
    (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", "expected 200, text/event-stream, chunked"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", "closed before the response head"),
    (GOOD_HEAD + chunk(b"data: hello\n\n"), 'expected data "<publish ns> <seq>", got "'),
    (GOOD_HEAD + chunk(b"data: 12 \n\n"), 'expected data "<publish ns> <seq>"'),
    (GOOD_HEAD + chunk(b"retry: 10\n\n"), "expected an SSE line"),
    (GOOD_HEAD + b"9\r\ndata: 1 2\nXX", "expected CRLF after a chunk's data"),
    (GOOD_HEAD + b"zz\r\n", "expected a chunk size"),
])
def test_fails_the_run_on_what_it_does_not_expect(client, answer, reason):
    server = ScriptedServer(answer)
    c = client(server.port, "/events", 1)
    code, stderr = c.failure()
    server.close()
    assert code == 1
    assert stderr.startswith("sse_fanout_client: stream 0: ") and reason in stderr, stderr
