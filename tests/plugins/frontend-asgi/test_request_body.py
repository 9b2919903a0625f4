"""Request bodies through receive() (ASGI 3.0 HTTP spec, "Request" event):
whole or streamed with more_body, however the client splits them, with
Content-Length or chunked; a large upload to a slow app in bounded memory;
the body's end when the client or the engine ends it early."""
import hashlib
import json
import random
import socket

import pytest

import m0test
from conftest import asgi_config, needs_asgi

pytestmark = needs_asgi

# Small enough that the test bodies cross it: bodies up to it (with a
# Content-Length) arrive whole, larger and chunked ones stream.
INPUT_BUFFER = 4096


def body_server(m0_server, app="body_apps:digest", *args, **kwargs):
    return m0_server(asgi_config(app, frontend_extra=f"  input_buffer: {INPUT_BUFFER}\n"), *args, **kwargs)


def splits(data, how, rng):
    """`data` cut the way a client might send it."""
    if how == "whole":
        return [data]
    if how == "bytes":
        return [data[i:i + 1] for i in range(len(data))]
    pieces, i = [], 0
    while i < len(data):
        n = rng.randint(1, 3000)
        pieces.append(data[i:i + n])
        i += n
    return pieces


def send_request(sock, path, pieces, chunked):
    total = sum(map(len, pieces))
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % total
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: t\r\n%s\r\n\r\n" % (path.encode(), framing))
    for piece in pieces:
        # Each piece in its own segment (TCP_NODELAY) and, chunked, its own chunk.
        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
    if chunked:
        sock.sendall(b"0\r\n\r\n")


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("how", ["whole", "bytes", "random"])
@pytest.mark.parametrize("size", [3000, 20000], ids=["under-input-buffer", "over-input-buffer"])
def test_app_sees_exactly_the_bytes_sent(m0_server, size, how, chunked):
    server = body_server(m0_server)
    rng = random.Random(size * 7 + len(how))
    data = bytes(rng.getrandbits(8) for _ in range(size))
    with server.connect(timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        send_request(s, "/", splits(data, how, rng), chunked)
        r = m0test.ResponseReader(s, timeout=30).read()
    assert r.status == 200, (r.body, server.output())
    seen = json.loads(r.body)
    assert seen["bytes"] == size
    assert seen["sha256"] == hashlib.sha256(data).hexdigest()
    # Never more than input_buffer per message; a body with a Content-Length
    # up to it comes whole, in one message.
    assert seen["largest"] <= max(INPUT_BUFFER, size if not chunked and size <= INPUT_BUFFER else 0)
    if not chunked and size <= INPUT_BUFFER:
        assert seen["messages"] == 1
    else:
        assert seen["messages"] >= size // INPUT_BUFFER


def test_empty_chunked_body_is_one_message(m0_server):
    server = body_server(m0_server)
    with server.connect() as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        r = m0test.ResponseReader(s).read()
    seen = json.loads(r.body)
    assert (seen["bytes"], seen["messages"]) == (0, 1)


def test_keep_alive_after_streamed_bodies(m0_server):
    server = body_server(m0_server)
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for i in range(5):
            data = bytes([i]) * (INPUT_BUFFER * 3 + i)
            s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
            assert json.loads(reader.read().body)["sha256"] == hashlib.sha256(data).hexdigest()


def test_large_upload_to_a_slow_app_stays_in_bounded_memory(m0_server):
    # 256 MiB to an app that sleeps after every piece: m0 must pull the body
    # only as the app asks (TCP holds the rest back), never buffer it.
    size = 256 * 1024 * 1024
    server = m0_server(asgi_config("body_apps:digest"), env=m0test.rss_env())
    warm = m0test.request(server.port, "POST", "/", body=b"x" * 300_000)
    assert warm.status == 200, server.output()
    before = m0test.rss_kib(server.proc.pid)

    with server.connect(timeout=120) as s:
        s.sendall(b"POST /?delay=0.0005 HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % size)
        expected = m0test.send_numbered_mib(s, size)
        r = m0test.ResponseReader(s, timeout=120).read()
    peak = m0test.rss_kib(server.proc.pid, "VmHWM")

    assert r.status == 200, (r.body, server.output())
    seen = json.loads(r.body)
    assert seen["bytes"] == size
    assert seen["sha256"] == expected
    assert seen["messages"] >= size // (64 * 1024)
    # The peak over the whole upload, not only what is left at its end.
    assert peak - before < 64 * 1024, (before, peak)


def test_chunked_body_over_the_limit_is_413_and_the_app_sees_a_disconnect(m0_server):
    # A Content-Length over the limit is refused before the app runs; a
    # chunked body is found too long only while the app reads it.
    server = body_server(m0_server, "body_apps:digest", "--set", "http.max_body_size=100k")
    with server.connect(timeout=30) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(50):
                s.sendall(b"1000\r\n" + b"y" * 4096 + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # m0 answered and closed before the rest
        raw = m0test.recv_until_closed(s, timeout=30)
    assert raw.startswith(b"HTTP/1.1 413")
    server.wait_for_log("digest: http.disconnect after")
    assert "Traceback" not in server.output()


def test_client_gone_mid_upload_is_a_disconnect(m0_server):
    server = body_server(m0_server, "body_apps:digest")
    s = server.connect()
    s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + b"z" * 10_000)
    server.wait_until_read(s)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
    s.close()
    server.wait_for_log("digest: http.disconnect after")
    assert "Traceback" not in server.output()
    assert m0test.request(server.port, "POST", "/", body=b"ok").status == 200


def test_answer_before_reading_then_receive_says_disconnect(m0_server):
    server = body_server(m0_server, "body_apps:early_answer")
    with server.connect() as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 50000\r\n\r\n" + b"w" * 50_000)
        r = m0test.ResponseReader(s).read()
        assert r.body == b"answered early"
    server.wait_for_log("early_answer: then http.disconnect")


def test_expect_100_continue_is_answered_when_the_app_reads(m0_server):
    server = body_server(m0_server)
    with server.connect() as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10000\r\nExpect: 100-continue\r\n\r\n")
        reader = m0test.ResponseReader(s)
        assert reader.read().status == 100
        s.sendall(b"e" * 10_000)
        r = reader.read()
    assert json.loads(r.body)["bytes"] == 10_000


def test_upload_cut_short_by_the_client_is_400_not_an_app_error(m0_server):
    # Content-Length promised more than the client sent before it shut down
    # its side: the request can never be complete. That is the client's
    # fault: m0 answers 400 (the half-closed client still reads it), the
    # app sees http.disconnect, and nothing is logged as the app's error.
    server = body_server(m0_server, "body_apps:digest")
    with server.connect() as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + b"z" * 10_000)
        s.shutdown(socket.SHUT_WR)
        raw = m0test.recv_until_closed(s, timeout=30)
    assert raw.startswith(b"HTTP/1.1 400 "), raw
    server.wait_for_log("digest: http.disconnect after")
    out = server.output()
    assert "Traceback" not in out and "error" not in out, out
    assert m0test.request(server.port, "POST", "/", body=b"ok").status == 200
