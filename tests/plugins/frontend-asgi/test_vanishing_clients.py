"""1,000 concurrent streaming responses whose clients vanish mid-stream:
every app Task ends (its send() raises), none is left on the loop (nor
cancelled at stop), and m0's memory does not grow round after round."""
import socket

import m0test
from conftest import asgi_config, needs_asgi

pytestmark = needs_asgi

CLIENTS = 1000


def one_round(server):
    socks = []
    for _ in range(CLIENTS):
        s = server.connect(timeout=60)
        s.sendall(b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
        socks.append(s)
    for s in socks:
        # Every stream is running: its head (and a first chunk) arrived.
        assert s.recv(1024).startswith(b"HTTP/1.1 200")
    for s in socks:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
        s.close()
    # Each app learns its client left and ends: no Task is left streaming
    # into the void (/tasks counts the loop's Tasks but its own).
    server.wait_until(lambda: m0test.request(server.port, "GET", "/tasks", timeout=30).body == b"0",
                      timeout=120, what="every streaming Task to end")


def test_thousand_streams_whose_clients_vanish(m0_server):
    server = m0_server(asgi_config("body_apps:endless"), threads=2, env=m0test.rss_env())
    # A first round grows the allocator's arenas to what 1,000 streams
    # need (how much depends on how far each stream got); the rounds after
    # it reuse them.
    one_round(server)
    one_round(server)
    rss = [m0test.rss_kib(server.proc.pid)]
    for _ in range(3):
        one_round(server)
        rss.append(m0test.rss_kib(server.proc.pid))
    # What a round leaves behind shows in every round; a round that got
    # further than all before it (a busy machine changes how far each stream
    # gets before its client vanishes) raises the arenas' high-water mark
    # once. So the smallest growth of the three is the one that tells.
    growth = [after - before for before, after in zip(rss, rss[1:])]
    assert min(growth) < 16 * 1024, rss
    assert server.stop() == 0
    out = server.output()
    assert "asyncio: loop 0 closed; 0 task(s) still running were cancelled" in out, out
    assert "Traceback" not in out
