"""Slow clients cannot hold the engine: a slow head is cut at header_timeout
however the bytes trickle in (slowloris), a stalled body at body_timeout per
read, an idle keep-alive connection at keepalive_timeout; and a normal client
is served meanwhile. Loopback only, bounded in connections and time.

Bounds are deliberately loose (seconds of slack): they catch a timeout that
is reset by every byte or never armed, not a timer that is 100 ms late."""
import json
import re
import selectors
import shutil
import socket
import subprocess
import threading
import time

import pytest

from m0test import scaled
from raw_client import Connection
from reflect_server import reflect_config

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 1.0
KEEPALIVE_TIMEOUT = 1.0
# Room for a loaded machine or a sanitizer build (M0_TEST_TIMEOUT_SCALE).
SLACK = scaled(3.0)

SLOW_CONFIG = {"header_timeout": f"{HEADER_TIMEOUT:g}s", "body_timeout": f"{BODY_TIMEOUT:g}s",
               "keepalive_timeout": f"{KEEPALIVE_TIMEOUT:g}s"}


@pytest.fixture
def server(m0_server):
    return m0_server(reflect_config(SLOW_CONFIG))


class NormalClient(threading.Thread):
    """Makes one ordinary request every `interval` on a fresh connection while
    an attack runs; records failures and latencies."""

    def __init__(self, port, interval=0.5):
        super().__init__(daemon=True)
        self.port, self.interval = port, interval
        self.stop_event = threading.Event()
        self.served, self.failures, self.worst = 0, [], 0.0

    def run(self):
        n = 0
        while not self.stop_event.is_set():
            n += 1
            start = time.monotonic()
            try:
                # Generous (scaled) for two busy cores beside a slowhttptest:
                # what it catches is a client never served, not a slow one.
                with Connection(self.port, timeout=scaled(5.0)) as c:
                    c.send(f"GET /normal/{n} HTTP/1.1\r\nHost: example.com\r\n\r\n".encode())
                    r = c.read_response()
                    assert r.status == 200 and json.loads(r.body)["target"] == f"/normal/{n}", repr(r)
                self.served += 1
                self.worst = max(self.worst, time.monotonic() - start)
            except (OSError, EOFError, AssertionError) as e:
                self.failures.append(f"request {n}: {e!r}")
            self.stop_event.wait(self.interval)

    def finish(self):
        self.stop_event.set()
        self.join(10)
        assert self.served > 0, "the normal client was never served"
        assert not self.failures, f"normal client not served during the attack: {self.failures[:5]}"


def drip(port, count, prefix, drip_bytes, interval, run_for):
    """Opens `count` connections that send `prefix`, then one byte of
    `drip_bytes` every `interval` seconds. Returns, per connection, the
    seconds until the server closed it (None if it never did within
    `run_for`) and what the server sent."""
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=2.0)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(prefix)
        s.setblocking(False)
        conn = {"sock": s, "opened": time.monotonic(), "closed_after": None, "received": b"", "sent": 0}
        conns.append(conn)
        sel.register(s, selectors.EVENT_READ, conn)
    start = time.monotonic()
    next_drip = start + interval
    try:
        while time.monotonic() - start < run_for and any(c["closed_after"] is None for c in conns):
            for key, _ in sel.select(timeout=max(0.0, min(0.2, next_drip - time.monotonic()))):
                c = key.data
                try:
                    data = c["sock"].recv(65536)
                except (ConnectionResetError, BlockingIOError) as e:
                    data = b"" if isinstance(e, ConnectionResetError) else None
                if data is None:
                    continue
                c["received"] += data
                if not data:
                    c["closed_after"] = time.monotonic() - c["opened"]
                    sel.unregister(c["sock"])
            if time.monotonic() >= next_drip:
                next_drip += interval
                for c in conns:
                    if c["closed_after"] is None:
                        byte = drip_bytes[c["sent"] % len(drip_bytes)]
                        try:
                            c["sock"].send(bytes([byte]))
                            c["sent"] += 1
                        except OSError:
                            pass  # closed by the server: the read side records it
    finally:
        for c in conns:
            c["sock"].close()
    return [(c["closed_after"], c["received"]) for c in conns]


def assert_cut(results, bound, what):
    open_ones = [i for i, (after, _) in enumerate(results) if after is None]
    assert not open_ones, f"{len(open_ones)} {what} connections still open after the run"
    late = [after for after, _ in results if after > bound]
    assert not late, f"{what}: {len(late)} connections closed only after {max(late):.1f}s (bound {bound:.1f}s)"
    for _, received in results:
        if received:
            status_line = received.split(b"\r\n", 1)[0]
            # RFC 9110 15.5.9: 408 when the server gives up waiting.
            assert status_line.startswith(b"HTTP/1.1 408"), f"{what}: unexpected answer {received[:200]!r}"
            assert b"\r\nconnection: close\r\n" in received.lower(), f"{what}: 408 without Connection: close"


def test_slowloris_own_client(server):
    """40 connections each send one header byte per second: every one is cut
    at header_timeout (the timer covers the whole head, not each read), and
    a normal client is served throughout."""
    normal = NormalClient(server.port)
    normal.start()
    results = drip(server.port, 40, b"GET / HTTP/1.1\r\nHost: example.com\r\n", b"X-Slow: abcdefgh\r\n",
                   interval=1.0, run_for=HEADER_TIMEOUT + SLACK + 2)
    normal.finish()
    assert_cut(results, HEADER_TIMEOUT + SLACK, "slow-header")


def test_slow_request_line(server):
    """The header timeout starts with the connection, before the request line ends."""
    results = drip(server.port, 10, b"G", b"ET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", interval=0.5,
                   run_for=HEADER_TIMEOUT + SLACK + 2)
    assert_cut(results, HEADER_TIMEOUT + SLACK, "slow-request-line")


def test_idle_connection_without_request(server):
    results = drip(server.port, 10, b"", b"", interval=10.0, run_for=HEADER_TIMEOUT + SLACK + 2)
    assert_cut(results, HEADER_TIMEOUT + SLACK, "silent")


def test_stalled_body_is_cut_at_body_timeout(server):
    """A client that stops sending its body is closed one body_timeout after
    its last byte (408 or a plain close)."""
    normal = NormalClient(server.port)
    normal.start()
    head = b"POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 100\r\n\r\n0123456789"
    results = drip(server.port, 20, head, b"", interval=60.0, run_for=BODY_TIMEOUT + SLACK + 2)
    normal.finish()
    assert_cut(results, BODY_TIMEOUT + SLACK, "stalled-body")


def test_slow_steady_body_is_per_read(m0_server):
    """body_timeout is per read, not per body: a body trickling in faster than
    body_timeout per byte is received whole, even when the whole body takes
    several body_timeouts."""
    # The pause between two bytes is what this client does (its input, not a
    # wait for m0): far below body_timeout, so a descheduled test thread
    # cannot stretch one past it.
    body_timeout, pause = scaled(BODY_TIMEOUT), 0.1
    body = b"abcdefgh" * (int(3 * body_timeout / pause) // 8 + 1)
    server = m0_server(reflect_config({"body_timeout": f"{body_timeout:g}s"}))
    with Connection(server.port, timeout=10.0) as c:
        c.send(b"POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: %d\r\n\r\n" % len(body))
        server.wait_until_read(c.sock)
        started = time.monotonic()
        for byte in body:
            time.sleep(pause)
            c.send(bytes([byte]))
            server.wait_until_read(c.sock)  # one read per byte
        r = c.read_response()
    assert r.status == 200 and json.loads(r.body)["body"] == body.decode()
    assert time.monotonic() - started > 2 * body_timeout  # the body outlasted the timeout


def test_slow_body_drip_cannot_starve_others(server):
    """Many bodies dripping one byte per half second (each read within
    body_timeout) hold only their own connections."""
    normal = NormalClient(server.port)
    normal.start()
    head = b"POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1000000\r\n\r\n"
    drip(server.port, 40, head, b"x", interval=BODY_TIMEOUT / 2, run_for=4.0)
    normal.finish()


def test_idle_keepalive_is_closed(server):
    with Connection(server.port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        assert c.read_response().status == 200
        start = time.monotonic()
        assert c.closed_by_server(timeout=KEEPALIVE_TIMEOUT + SLACK), "idle keep-alive connection never closed"
        assert time.monotonic() - start <= KEEPALIVE_TIMEOUT + SLACK


@pytest.mark.skipif(shutil.which("slowhttptest") is None, reason="slowhttptest (Debian package) not installed")
def test_slowhttptest_slowloris(server):
    """slowhttptest in slowloris mode (1000 connections opened at 100 per
    second, a random header line on each every second, at most 12 s) while a
    normal client must keep being served. slowhttptest ends early when the
    server has closed every connection it opened."""
    normal = NormalClient(server.port)
    normal.start()
    cmd = ["slowhttptest", "-H", "-c", "1000", "-r", "100", "-i", "1", "-x", "16", "-l", "12", "-p", "2",
           "-u", f"http://127.0.0.1:{server.port}/"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    normal.finish()
    out = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", proc.stdout + proc.stderr)  # colour codes
    assert proc.returncode == 0, f"slowhttptest failed ({proc.returncode}):\n{out[-2000:]}"
    # Its own probe must never have found the service unavailable.
    assert "service available:" in out, out[-2000:]
    assert not re.search(r"service available:\s*NO", out), out[-2000:]
    assert server.proc.poll() is None, f"m0 died under slowloris:\n{server.output()}"
