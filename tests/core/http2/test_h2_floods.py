"""Attacks on the HTTP/2 engine over raw sockets (frames written with
hyperframe and hpack, some of which h2 would refuse to make): rapid reset,
a CONTINUATION flood, an HPACK bomb, SETTINGS and PING floods from a
client that does not read, a zero-window reader asking for large bodies and
many streams trickling their bodies. For each: the abuser is told off
(GOAWAY, a reset) or closed, m0's resident memory stays bounded, and
another client, over HTTP/2 and over HTTP/1.1, is answered promptly during
and after the attack."""
import json
import os
import random
import socket
import struct
import sys
import threading
import time

import h2.exceptions
import hpack
import httpx
import pytest
from hyperframe.frame import (ContinuationFrame, DataFrame, GoAwayFrame, HeadersFrame, PingFrame, RstStreamFrame,
                              SettingsFrame)

import m0test
from h2_support import (ASGI_APPS, CANCEL, COMPRESSION_ERROR, ENHANCE_YOUR_CALM, INTERNAL_ERROR, NO_ERROR, PREFACE,
                        PROTOCOL_ERROR, WSGI_APPS, Client, FrameReader, connect, python_plugins_built)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "telemetry"))
from metrics_support import metrics_port, samples, value  # noqa: E402

pytestmark = pytest.mark.skipif(not python_plugins_built(),
                                reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")

MIB = 1024 * 1024
# Resident memory m0 may gain during an attack (measured: a few MiB).
RSS_GROWTH_BOUND = 64 * MIB
# An answer to the bystander client within this (seconds, scaled).
PROMPT = 5.0
BIG_FILE = 96 * MIB


def deployment(root, extra=""):
    """Static files (/files), a native route (/hello), the WSGI test router
    on a pool (/wsgi) and the ASGI body digest on an asyncio loop (/asgi)."""
    return (
        "executors:\n"
        "  app: {type: pool, pool: {threads: 4, max_threads: 4}}\n"
        "  loop: {type: asyncio}\n"
        "mounts:\n"
        "  - prefix: /files\n"
        f"    frontend: {{type: http, static: {{prefix: /files, root: {root}}}}}\n"
        "  - prefix: /hello\n"
        "    frontend:\n"
        "      type: http\n"
        "      routes: [{path: /hello, body: 'Hello, World!', headers: {Content-Type: text/plain}}]\n"
        "  - prefix: /wsgi\n"
        f"    frontend: {{type: wsgi, app: 'wsgi_apps:router', chdir: {WSGI_APPS}}}\n"
        "    executor: app\n"
        "  - prefix: /asgi\n"
        f"    frontend: {{type: asgi, app: 'body_apps:digest', chdir: {ASGI_APPS}}}\n"
        "    executor: loop\n"
        "metrics:\n"
        "  listen: 127.0.0.1:0\n"
        + extra
    )


def calm_count(server):
    """m0_http2_enhance_your_calm_total."""
    return value(samples(metrics_port(server)), "m0_http2_enhance_your_calm_total")


@pytest.fixture
def target(m0_server, tmp_path):
    """m0 serving the deployment, warmed up (every mount answered once)."""
    root = tmp_path / "www"
    root.mkdir()
    with open(root / "big.bin", "wb") as f:
        f.truncate(BIG_FILE)

    def start(extra=""):
        server = m0_server(deployment(root, extra), env=m0test.rss_env())
        assert_served(server)
        assert m0test.request(server.port, path="/wsgi/hello").status == 200
        assert m0test.request(server.port, method="POST", path="/asgi/", body=b"x" * 100000).status == 200
        return server
    return start


def assert_served(server):
    """Another client is answered promptly: HTTP/2 (prior knowledge) and
    HTTP/1.1, each on a new connection."""
    started = time.monotonic()
    with httpx.Client(http1=False, http2=True, timeout=m0test.scaled(PROMPT)) as client:
        response = client.get(f"http://127.0.0.1:{server.port}/hello")
    assert response.http_version == "HTTP/2" and response.text == "Hello, World!"
    assert m0test.request(server.port, path="/hello", timeout=PROMPT).body == b"Hello, World!"
    elapsed = time.monotonic() - started
    assert elapsed < m0test.scaled(PROMPT), f"the bystander waited {elapsed:.1f}s"


class RssWatch:
    """The largest resident memory of m0 while the attack runs, sampled
    from /proc in a thread."""

    def __init__(self, server):
        self.pid = server.proc.pid
        self.baseline = m0test.rss_kib(self.pid) * 1024
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.05):
            try:
                self.peak = max(self.peak, m0test.rss_kib(self.pid) * 1024)
            except (OSError, AssertionError):
                return

    def check(self):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, m0test.rss_kib(self.pid) * 1024)
        growth = self.peak - self.baseline
        print(f"m0 RSS: {self.baseline / MIB:.1f} MiB before, {self.peak / MIB:.1f} MiB at the peak")
        assert growth < RSS_GROWTH_BOUND, f"m0's RSS grew by {growth / MIB:.1f} MiB"


class Bystander:
    """A thread that keeps asking m0 for /hello over HTTP/2 and HTTP/1.1
    while the attack runs; every answer must come promptly."""

    def __init__(self, server):
        self.server = server
        self.errors, self.answers = [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                assert_served(self.server)
                self.answers += 1
            except Exception as e:  # noqa: BLE001 (reported by check())
                self.errors.append(repr(e))
                return
            self._stop.wait(0.05)

    def check(self):
        self._stop.set()
        self._thread.join()
        assert not self.errors, self.errors
        assert self.answers > 0


def attacker(port, settings=None, rcvbuf=None):
    """A raw connection that has sent the preface and its SETTINGS."""
    sock = connect(port, rcvbuf=rcvbuf)
    frame = SettingsFrame(0)
    frame.settings.update(settings or {})
    sock.sendall(PREFACE + frame.serialize())
    return sock


def send_until_refused(sock, frames, batch=200, timeout=5.0, progress=None):
    """Sends the serialized `frames` in batches until all are sent, m0
    closes the connection, or m0 stops reading for `timeout` seconds.
    Returns (frames sent, why it stopped); `progress(sent)` after each batch."""
    sock.settimeout(m0test.scaled(timeout))
    sent = 0
    for start in range(0, len(frames), batch):
        try:
            sock.sendall(b"".join(frames[start:start + batch]))
        except (BrokenPipeError, ConnectionResetError):
            return sent, "closed"
        except (socket.timeout, TimeoutError):
            return sent, "blocked"
        sent += len(frames[start:start + batch])
        if progress:
            progress(sent)
    return sent, "sent"


class Abuse:
    """An attacker's connection, and a thread reading what m0 sends on it:
    every GOAWAY with the number of frames the attacker had sent when it
    came. `reading` False: the thread starts only with read_from_now_on()
    (a client that does not read)."""

    def __init__(self, port, rcvbuf=None, reading=True):
        self.sock = attacker(port, rcvbuf=rcvbuf)
        self.sent = 0
        self.frames_in = 0
        self.goaways = []
        self.error = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        if reading:
            self._thread.start()

    def read_from_now_on(self):
        self._thread.start()

    def _read(self):
        # Its own socket object (the same connection): its timeout is not the sender's.
        reader = FrameReader(self.sock.dup())
        try:
            while (frame := reader.next(timeout=60)) is not None:
                self.frames_in += 1
                if isinstance(frame, GoAwayFrame):
                    self.goaways.append((frame, self.sent))
        except Exception as e:  # noqa: BLE001 (reported by told_off())
            self.error = e

    def close(self):
        """Closes the connection (the reader's socket object too)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._thread.join(timeout=m0test.scaled(10))

    def send(self, frames, batch=200):
        def progress(sent):
            self.sent = sent
        sent, why = send_until_refused(self.sock, frames, batch, progress=progress)
        self.sent = sent
        return why

    def told_off(self, allowed, timeout=20.0):
        """Waits for m0 to close the connection; every GOAWAY it sent has
        one of the `allowed` codes. Returns [(GOAWAY, frames sent then)]."""
        self._thread.join(timeout=m0test.scaled(timeout))
        assert not self._thread.is_alive(), f"m0 kept the connection open (GOAWAY frames: {self.goaways})"
        assert self.error is None, repr(self.error)
        codes = [goaway.error_code for goaway, _ in self.goaways]
        assert all(code in allowed for code in codes), f"GOAWAY codes {codes}, expected some of {allowed}"
        self.close()
        return self.goaways


def request_block(encoder, path="/hello", extra=()):
    return encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "localhost"), (":path", path),
                           *extra])


def test_rapid_reset(target):
    """20000 HEADERS each cancelled at once by RST_STREAM (CVE-2023-44487):
    GOAWAY after a few hundred streams, and the close."""
    server = target()
    watch, bystander = RssWatch(server), Bystander(server)
    abuse = Abuse(server.port)
    encoder = hpack.Encoder()
    frames = [HeadersFrame(1 + 2 * i, request_block(encoder), flags=["END_HEADERS", "END_STREAM"]).serialize()
              + RstStreamFrame(1 + 2 * i, error_code=CANCEL).serialize() for i in range(20000)]
    why = abuse.send(frames, batch=100)
    goaways = abuse.told_off((ENHANCE_YOUR_CALM,))
    print(f"rapid reset: {abuse.sent} pairs sent ({why}); GOAWAY (code, last stream, pairs sent then): "
          f"{[(g.error_code, g.last_stream_id, sent) for g, sent in goaways]}")
    # The client's resets spend m0's budget (reset_burst 200): ENHANCE_YOUR_CALM,
    # counted, well before the 20000th stream (nghttp2's own limiter, at
    # twice the numbers, never gets to say INTERNAL_ERROR).
    assert goaways, "no GOAWAY"
    assert goaways[0][0].last_stream_id < 2 * 2000, goaways
    assert calm_count(server) == 1
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


def test_continuation_flood(target):
    """HEADERS without END_HEADERS, then 60 MB of CONTINUATION frames
    (CVE-2024-27316 and kin): GOAWAY early, nothing kept."""
    server = target()
    watch, bystander = RssWatch(server), Bystander(server)
    abuse = Abuse(server.port)
    encoder = hpack.Encoder()
    frames = [HeadersFrame(1, request_block(encoder)).serialize()]
    # Each CONTINUATION holds literal fields that are never indexed.
    field = b"\x10\x07x-flood\x7f" + encode_int(1000 - 127) + b"a" * 1000
    piece = field * 15
    frames += [ContinuationFrame(1, piece).serialize() for _ in range(4000)]
    why = abuse.send(frames, batch=20)
    goaways = abuse.told_off((ENHANCE_YOUR_CALM, PROTOCOL_ERROR, COMPRESSION_ERROR, INTERNAL_ERROR))
    print(f"CONTINUATION flood: {abuse.sent} frames of {len(piece)} bytes sent ({why}); "
          f"GOAWAY (code, frames sent then): {[(g.error_code, sent) for g, sent in goaways]}")
    # The GOAWAY came before a quarter of the flood was out (what the
    # sockets' buffers hold is a few MB of the 60).
    assert goaways and goaways[0][1] < len(frames) // 4, goaways
    if goaways[0][0].error_code == ENHANCE_YOUR_CALM:
        assert calm_count(server) == 1
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


def test_hpack_bomb(target):
    """One 4 KB field in the dynamic table, referenced by one-byte indexes
    thousands of times per request: 431 (or a reset) for each such request,
    no decoded copy kept."""
    server = target()
    watch, bystander = RssWatch(server), Bystander(server)
    outcomes = []
    for _ in range(10):
        sock = attacker(server.port)
        reader = FrameReader(sock)
        decoder = hpack.Decoder()
        # Literal with incremental indexing, new name: the table's entry 62.
        value = b"b" * 4000
        seed = b"\x40\x06x-bomb" + b"\x7f" + encode_int(len(value) - 127) + value
        frames = []
        for i in range(4):
            stream_id = 1 + 2 * i
            # 12000 references: 48 MB decoded, in one frame.
            block = REQUEST_HEAD + (seed if i == 0 else b"") + b"\xbe" * 12000
            frames.append(HeadersFrame(stream_id, block, flags=["END_HEADERS", "END_STREAM"]).serialize())
        sent, why = send_until_refused(sock, frames, batch=1)
        statuses = {}
        while True:
            try:
                frame = reader.next(timeout=20)
            except (socket.timeout, TimeoutError):
                raise AssertionError(f"no end of the bomb's streams: {statuses}")
            if frame is None:
                break
            if isinstance(frame, HeadersFrame):
                headers = dict(decoder.decode(frame.data))
                statuses[frame.stream_id] = headers.get(":status", headers.get(b":status"))
            elif isinstance(frame, RstStreamFrame):
                statuses.setdefault(frame.stream_id, f"reset {frame.error_code}")
            elif isinstance(frame, GoAwayFrame):
                statuses["goaway"] = frame.error_code
                break
            if all(1 + 2 * i in statuses for i in range(4)):
                break
        sock.close()
        outcomes.append(statuses)
        for stream_id, status in statuses.items():
            assert status not in ("200", b"200"), f"a bomb was answered 200: {statuses}"
    print(f"HPACK bomb outcomes: {outcomes}")
    assert any(s in ("431", b"431") for o in outcomes for s in o.values()) or all("goaway" in o for o in outcomes)
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


def encode_int(value):
    """The continuation bytes of an HPACK integer past its prefix."""
    out = bytearray()
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


# A GET /hello head from the static table and literals not indexed (the
# dynamic table stays the bomb's alone).
REQUEST_HEAD = (b"\x82"  # :method GET
                b"\x86"  # :scheme http
                b"\x04\x06/hello"  # :path, literal without indexing
                b"\x01\x09localhost")  # :authority, literal without indexing


@pytest.mark.parametrize("kind", ["settings", "ping"])
def test_control_frame_flood_from_a_client_that_does_not_read(target, kind):
    """SETTINGS or PING frames, each asking for an ACK, from a client that
    reads none (CVE-2019-9512, -9515): m0 does not queue ACKs without end.
    It says ENHANCE_YOUR_CALM (nghttp2 found the ACKs it holds too many),
    or it stopped reading once its output was full, and the connection,
    with no request on it, ends at the header timeout."""
    server = target("http:\n  header_timeout: 3s\n")
    watch, bystander = RssWatch(server), Bystander(server)
    abuse = Abuse(server.port, rcvbuf=4096, reading=False)
    if kind == "ping":
        frame = PingFrame(0, b"abcdefgh").serialize()
    else:
        settings = SettingsFrame(0)
        settings.settings[SettingsFrame.ENABLE_PUSH] = 0
        frame = settings.serialize()
    frames = [frame] * 1_000_000
    why = abuse.send(frames, batch=2000)
    abuse.read_from_now_on()
    goaways = abuse.told_off((ENHANCE_YOUR_CALM, PROTOCOL_ERROR, NO_ERROR), timeout=30)
    codes = [g.error_code for g, _ in goaways]
    print(f"{kind} flood: {abuse.sent} frames sent ({why}), {abuse.frames_in} frames back; GOAWAY codes {codes}")
    if why != "blocked":
        # m0 read the whole flood: it must have refused it.
        assert ENHANCE_YOUR_CALM in codes or PROTOCOL_ERROR in codes, codes
    # Never more ACKs than asked for.
    assert abuse.frames_in <= abuse.sent + 10
    # Each GOAWAY ENHANCE_YOUR_CALM is counted.
    assert calm_count(server) == codes.count(ENHANCE_YOUR_CALM)
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


def test_zero_window_reader(target):
    """A client whose windows are 0 and that never sends WINDOW_UPDATE asks
    for a large static file and a large streamed WSGI body: m0 neither reads
    the file nor lets the app run ahead into memory, and the stalled
    streams end at the write timeout."""
    server = target("http:\n  write_timeout: 2s\n")
    watch, bystander = RssWatch(server), Bystander(server)
    client = Client(server.port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0}, auto_window=False)
    static = client.request("/files/big.bin")
    app = client.request("/wsgi/big?tag=zero&n=64")
    client.wait(lambda: client.responses[static].headers and client.responses[app].headers,
                what="both response heads")
    assert client.responses[static].status == 200 and client.responses[app].status == 200
    assert not client.responses[static].body and not client.responses[app].body
    # Both streams stay stalled until the write timeout ends them (a reset,
    # or the connection closed).
    client.wait(lambda: (client.closed or all(client.responses[s].reset is not None for s in (static, app))),
                timeout=30, what="the stalled streams to end")
    produced = json.loads(m0test.request(server.port, path="/wsgi/produced?tag=zero").body)["count"]
    print(f"zero window: the app produced {produced} MiB; resets {[client.responses[s].reset for s in (static, app)]}")
    assert produced < 16
    client.close()
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


def test_many_streams_trickling_bodies(target):
    """50 streams each announcing a 1 MiB body and sending it a few bytes at
    a time, then nothing: the bystander is answered throughout, and each
    stalled stream ends at the body timeout."""
    server = target("http:\n  body_timeout: 2s\n")
    watch, bystander = RssWatch(server), Bystander(server)
    client = Client(server.port)
    streams = [client.request("/asgi/", method="POST", headers=[("content-length", str(MIB))], end_stream=False)
               for _ in range(50)]
    for _ in range(5):
        for stream_id in streams:
            client.conn.send_data(stream_id, b"x" * 10)
        client.flush()
        time.sleep(0.3)  # the pace of the attack (not a wait for m0)
        assert_served(server)
    # Then silence: every stream ends (408 or a reset) at the body timeout.
    client.wait(lambda: client.closed or all(client.responses[s].ended or client.responses[s].reset is not None
                                             for s in streams), timeout=30, what="the stalled bodies to time out")
    outcomes = sorted({client.responses[s].status or f"reset {client.responses[s].reset}" for s in streams},
                      key=str)
    print(f"trickling bodies: {outcomes}; connection closed: {client.closed}")
    assert all(o in (408, 400, 413) or str(o).startswith("reset") for o in outcomes), outcomes
    client.close()
    server.wait_for_log("digest: http.disconnect after", count=1)
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


def test_a_peer_that_closes_with_a_stream_stalled_on_its_window_is_closed(target):
    """A client with windows of 1 byte asks for a response and closes its
    side: no WINDOW_UPDATE can come any more, so m0 closes the connection
    at once rather than holding it (CLOSE-WAIT) until the write timeout,
    and a drain does not wait for it."""
    server = target()
    sockets = []
    for _ in range(20):
        sock = attacker(server.port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 1})
        sock.sendall(HeadersFrame(1, REQUEST_HEAD, flags=["END_HEADERS", "END_STREAM"]).serialize())
        reader = FrameReader(sock)
        while not isinstance(frame := reader.next(), DataFrame):
            assert frame is not None, "closed before the first byte of the body"
        client_port = sock.getsockname()[1]
        sock.shutdown(socket.SHUT_WR)
        sockets.append((sock, client_port))
    CLOSE_WAIT = "08"  # the state column of /proc/net/tcp
    server.wait_until(lambda: all((m0test.server_end(server.port, port) or ("",))[0] != CLOSE_WAIT
                                  for _, port in sockets), timeout=5,
                      what="m0 to close the connections whose client closed its side")
    for sock, _ in sockets:
        sock.close()
    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < m0test.scaled(5)


def test_invalid_requests_spend_the_reset_budget(target):
    """Requests m0 must reset (a connection-specific field, RFC 9113
    8.2.2), one after another (CVE-2019-9514): past reset_burst, GOAWAY
    ENHANCE_YOUR_CALM, counted in m0_http2_enhance_your_calm_total."""
    server = target("http2:\n  reset_burst: 50\n  reset_rate: 10\n")
    watch, bystander = RssWatch(server), Bystander(server)
    abuse = Abuse(server.port)
    encoder = hpack.Encoder()
    frames = [HeadersFrame(1 + 2 * i, request_block(encoder, extra=[("connection", "keep-alive")]),
                           flags=["END_HEADERS", "END_STREAM"]).serialize() for i in range(5000)]
    why = abuse.send(frames, batch=50)
    goaways = abuse.told_off((ENHANCE_YOUR_CALM,))
    print(f"invalid requests: {abuse.sent} sent ({why}); GOAWAY (code, last stream, sent then): "
          f"{[(g.error_code, g.last_stream_id, sent) for g, sent in goaways]}")
    assert goaways and goaways[0][0].last_stream_id < 2 * 500, goaways
    assert calm_count(server) == 1
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


def test_empty_data_frames_flood(target):
    """A request body sent as 500000 empty DATA frames (CVE-2019-9518): m0
    either refuses it or reads it at no cost in memory, and serves others
    meanwhile."""
    server = target()
    watch, bystander = RssWatch(server), Bystander(server)
    abuse = Abuse(server.port)
    encoder = hpack.Encoder()
    head = encoder.encode([(":method", "POST"), (":scheme", "http"), (":authority", "localhost"), (":path", "/asgi/")])
    frames = [HeadersFrame(1, head, flags=["END_HEADERS"]).serialize(), DataFrame(1, b"x").serialize()]
    frames += [DataFrame(1, b"").serialize()] * 500_000
    why = abuse.send(frames, batch=5000)
    print(f"empty DATA flood: {abuse.sent} frames sent ({why}); GOAWAY {[(g.error_code, s) for g, s in abuse.goaways]}")
    abuse.close()
    # The app waiting for the body learns that its client is gone.
    server.wait_for_log("digest: http.disconnect after 1 bytes")
    watch.check()
    bystander.check()
    assert_served(server)
    assert server.stop() == 0


CHURN_SEED = int(os.environ.get("M0_H2_CHURN_SEED", "1"))


def test_churn_of_resets_and_vanishing_clients(target):
    """8 clients, 25 connections each with 20 streams over every mount
    (bodies up, files and streamed answers down), half the streams reset,
    then each connection dropped one of three ways (close, RST, FIN then
    close) at a random point: m0 serves on, its memory stays bounded, and it
    stops cleanly (under ASan: no report). Seeded: M0_H2_CHURN_SEED=<n>
    replays a run."""
    server = target()
    watch = RssWatch(server)
    errors = []

    def client(n):
        rnd = random.Random(CHURN_SEED * 1000 + n)
        for _ in range(25):
            try:
                conn = Client(server.port, timeout=20)
                streams = []
                for _ in range(20):
                    path = rnd.choice(["/wsgi/stream?n=200", "/files/big.bin", "/hello",
                                       "/wsgi/stream?n=5&delay=0.01", "/asgi/"])
                    try:
                        if path == "/asgi/":
                            streams.append(conn.request(path, method="POST", body=rnd.randbytes(rnd.randint(0, 200000)),
                                                        end_stream=rnd.random() < 0.7))
                        else:
                            streams.append(conn.request(path))
                    except h2.exceptions.StreamClosedError:
                        pass  # m0 answered (or reset) before the whole body went
                for stream_id in streams:
                    if rnd.random() < 0.5:
                        try:
                            conn.reset(stream_id)
                        except h2.exceptions.StreamClosedError:
                            pass
                try:
                    for _ in range(rnd.randint(0, 5)):
                        conn.receive(timeout=2)
                except (socket.timeout, TimeoutError):
                    pass
                how = rnd.choice(["close", "reset", "fin"])
                if how == "reset":
                    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                elif how == "fin":
                    conn.sock.shutdown(socket.SHUT_WR)
                conn.close()
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(f"seed {CHURN_SEED}, client {n}: {e!r}")
                return
    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert_served(server)
    watch.check()
    assert server.stop() == 0
