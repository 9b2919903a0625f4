"""wsgi.input over a streamed request body: bodies above input_buffer (or
chunked) are pulled from the connection while the app reads, with the pool
executor; `inline` keeps buffering the whole body. Each case runs for both
executors unless it is about streaming itself."""
import hashlib
import json
import socket
import threading

import pytest

import m0test

APP = "upload_apps:router"


def pattern(n):
    line = b"".join(b"line %06d of the request body\n" % i for i in range(2000))
    return (line * (n // len(line) + 1))[:n]


def post(server, path, body, headers=b"", chunks=None):
    with server.connect(timeout=30) as s:
        if chunks is None:
            s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n" % len(body) + headers +
                      b"\r\n" + body)
        else:
            s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n" + headers + b"\r\n")
            for c in chunks:
                s.sendall(b"%x\r\n" % len(c) + c + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        return m0test.ResponseReader(s, timeout=30).read()


def assert_closed(sock, timeout=30):
    """The server closed the connection, with nothing more to read."""
    sock.settimeout(timeout)
    try:
        assert sock.recv(65536) == b""
    except ConnectionResetError:
        pass


def expect_count(r, body, server):
    assert r.status == 200, (r.status, r.body, server.output())
    answer = json.loads(r.body)
    assert answer["bytes"] == len(body)
    assert answer["sha256"] == hashlib.sha256(body).hexdigest()
    return answer


@pytest.mark.parametrize("mode", ["pieces", "all", "readline", "readline_limit", "readlines", "iterate"])
def test_large_body_reads_the_same_in_every_mode(wsgi_server, mode):
    server = wsgi_server(APP)
    body = pattern(300_000)
    answer = expect_count(post(server, b"/count?mode=" + mode.encode(), body), body, server)
    assert answer["content_length"] == str(len(body))
    assert answer["input_terminated"] is True


def test_small_body_stays_whole(wsgi_server):
    server = wsgi_server(APP)
    body = pattern(1000)
    answer = expect_count(post(server, b"/count", body), body, server)
    assert answer["content_length"] == "1000"


def test_chunked_upload(wsgi_server, executor):
    server = wsgi_server(APP)
    chunks = [pattern(n) for n in (1, 70_000, 5, 131_072, 3000)]
    body = b"".join(chunks)
    answer = expect_count(post(server, b"/count?mode=readline", body, chunks=chunks), body, server)
    assert answer["input_terminated"] is True
    if executor == "pool":
        assert answer["content_length"] is None  # streamed: the length is not known up front
    else:
        assert answer["content_length"] == str(len(body))  # inline buffers the whole body


def test_small_chunked_upload_stays_whole_with_content_length(wsgi_server):
    server = wsgi_server(APP)
    chunks = [pattern(n) for n in (10, 30_000, 5)]
    body = b"".join(chunks)
    answer = expect_count(post(server, b"/count", body, chunks=chunks), body, server)
    assert answer["content_length"] == str(len(body))


def test_input_buffer_key_sets_the_threshold(wsgi_server, executor):
    server = wsgi_server(APP, extra="  input_buffer: 4k\n")
    body = pattern(10_000)
    answer = expect_count(post(server, b"/count", body), body, server)
    assert answer["content_length"] == "10000"


def test_continue_is_sent_only_when_the_app_reads(wsgi_server, executor):
    if executor != "pool":
        pytest.skip("inline buffers the body: 100 Continue goes out with the head, as before")
    server = wsgi_server(APP)
    body = pattern(200_000)
    with server.connect() as s:
        s.sendall(b"POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n" % len(body))
        reader = m0test.ResponseReader(s)
        interim = reader.read(head_only=True)
        assert interim.status == 100
        s.sendall(body)
        expect_count(reader.read(), body, server)
    with server.connect() as s:
        s.sendall(b"POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n" % len(body))
        r = m0test.ResponseReader(s).read()
        assert r.status == 200 and r.body == b"ignored"  # no 100 before it
        assert r.header("connection") == "close"
        assert_closed(s)


def test_app_that_ignores_a_large_body(wsgi_server, executor):
    if executor != "pool":
        pytest.skip("inline reads the whole body before the app runs")
    server = wsgi_server(APP)
    total = 50 * 1024 * 1024
    with server.connect(timeout=30) as s:
        s.sendall(b"POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % total)

        def send_body():
            try:
                piece = b"x" * 65536
                for _ in range(total // len(piece)):
                    s.sendall(piece)
            except OSError:
                pass  # the server closed after its answer: expected

        sender = threading.Thread(target=send_body)
        sender.start()
        r = m0test.ResponseReader(s, timeout=30).read()
        assert r.status == 200 and r.body == b"ignored"
        assert r.header("connection") == "close"
        assert_closed(s)
        try:
            s.shutdown(socket.SHUT_RDWR)  # unblocks the sender if it still waits
        except OSError:
            pass  # already disconnected
        sender.join(timeout=30)
    # The worker still serves.
    assert m0test.request(server.port, path="/ignore").body == b"ignored"


def test_body_over_max_body_size_mid_stream(wsgi_server, executor):
    server = wsgi_server(APP, "", "--set", "http.max_body_size=100k")
    chunks = [pattern(60_000), pattern(60_000)]
    with server.connect(timeout=30) as s:
        s.sendall(b"POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for c in chunks:
                s.sendall(b"%x\r\n" % len(c) + c + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        r = m0test.ResponseReader(s).read()
    assert r.status == 413, (r.status, r.body, server.output())
    assert m0test.request(server.port, path="/ignore").body == b"ignored"
