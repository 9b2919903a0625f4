"""The client of bench/rate_latency: it sends on its schedule whatever the
server does, measures each request from the time it was meant to be sent
(so a stall counts for every request scheduled during it, not once), opens
a new connection after a response that closes, and counts requests the
server never answered."""
import json
import os
import socket
import subprocess
import threading
import time

import m0test

CLIENT = os.path.join(m0test.BUILD_DIR, "tests", "rate_client")
HELLO = "server: {}\nfrontend:\n  type: http\n  routes:\n    - {path: /hello, body: 'Hello, World!'}\n"


def run(port, rate, connections, duration, warmup, path="/hello"):
    out = subprocess.run([CLIENT, "127.0.0.1", str(port), path, str(rate), str(connections), str(duration),
                          str(warmup), "Accept: */*"], capture_output=True, text=True,
                         timeout=m0test.scaled(duration + 30))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


class ScriptedServer:
    """Answers each request with a 2-byte body; `respond(n)` is called
    before the n-th answer (from 0, over all connections) and says whether
    to close the connection after it."""

    def __init__(self, respond):
        self.respond = respond
        self.count = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.listener.getsockname()[1]
        self.threads = [threading.Thread(target=self.accept, daemon=True)]
        self.threads[0].start()

    def accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            t = threading.Thread(target=self.serve, args=(conn,), daemon=True)
            t.start()

    def serve(self, conn):
        data = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                _, _, data = data.partition(b"\r\n\r\n")
                with self.lock:
                    n, self.count = self.count, self.count + 1
                close = self.respond(n)
                head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + (b"Connection: close\r\n" if close else b"")
                conn.sendall(head + b"\r\nok")
                if close:
                    return

    def close(self):
        self.listener.close()


def test_every_scheduled_request_is_answered_by_m0(m0_server):
    server = m0_server(HELLO)
    r = run(server.port, rate=400, connections=4, duration=1.5, warmup=0.5)
    assert r["scheduled"] == 400 and r["completed"] == 400, r
    assert r["errors"] == 0 and r["unanswered"] == 0, r
    assert 0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"], r


def test_a_stall_counts_for_every_request_scheduled_during_it():
    # One connection at 100/s; the 60th answer (in the counted second) is
    # held 0.3 s. A client that waited to send would count one slow request
    # of 100 (its p90 and p99 fast); from the schedule, the ~30 requests
    # meant for those 0.3 s were all late, by 0.3 s down to nothing.
    stalled = threading.Event()

    def respond(n):
        if n == 60:
            stalled.wait(0.3)  # no one sets it: a 0.3 s stall
        return False

    server = ScriptedServer(respond)
    try:
        r = run(server.port, rate=100, connections=1, duration=1.5, warmup=0.5)
    finally:
        server.close()
    assert r["completed"] == 100 and r["unanswered"] == 0, r
    assert r["p50_ms"] < 50 and r["p90_ms"] > 100 and r["p99_ms"] > 200, r
    assert r["max_ms"] >= 290, r


def test_a_response_that_closes_is_followed_by_a_new_connection():
    server = ScriptedServer(lambda n: True)  # Connection: close on every answer
    try:
        r = run(server.port, rate=200, connections=2, duration=1.5, warmup=0.5)
    finally:
        server.close()
    assert r["completed"] == 200 and r["errors"] == 0 and r["unanswered"] == 0, r


def test_requests_a_slow_server_never_reached_count_as_unanswered():
    # 2000/s scheduled on one connection, each answer 20 ms late: the
    # connection gets through ~50 per second, far fewer than its schedule,
    # so most of the counted second was never sent: unanswered, not absent.
    server = ScriptedServer(lambda n: threading.Event().wait(0.02) and False)
    try:
        r = run(server.port, rate=2000, connections=1, duration=1.2, warmup=0.2)
    finally:
        server.close()
    assert r["scheduled"] == 2000, r
    assert r["unanswered"] > 1000 and r["completed"] + r["errors"] + r["unanswered"] == 2000, r
