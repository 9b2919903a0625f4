"""PEP 3333 end to end: environ, wsgi.input, response shapes, streaming,
write(), file_wrapper, exc_info and close(), for both executors. The app is
wrapped in wsgiref.validate.validator (apps/wsgi_apps.py)."""
import errno
import json
import os
import socket

import pytest

import m0test
from conftest import APPS  # noqa: F401  (documents where the apps live)

PAYLOAD = bytes(range(256)) * 400


def get_json(server, path, **kwargs):
    r = m0test.request(server.port, path=path, **kwargs)
    assert r.status == 200, (r.status, r.body, server.output())
    return json.loads(r.body)


def test_environ_cgi_keys(wsgi_server):
    server = wsgi_server()
    raw = (b"POST /environ/a%20b%C3%A9%2F?x=1&y=%41 HTTP/1.1\r\n"
           b"Host: example.test:8080\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
           b"X-Dup: a\r\nX-Dup: b\r\nCookie: a=1\r\nCookie: b=2\r\nX_Spoof: nope\r\nUser-Agent: tester/1\r\nConnection: close\r\n\r\nhello")
    with server.connect() as s:
        s.sendall(raw)
        r = m0test.ResponseReader(s).read()
    assert r.status == 200, (r.body, server.output())
    env = json.loads(r.body)
    assert env["REQUEST_METHOD"] == "POST"
    # Percent-decoded, each byte one latin-1 character; %2F stays a byte '/'.
    assert env["PATH_INFO"] == "/environ/a b\u00c3\u00a9/"
    assert env["SCRIPT_NAME"] == ""
    assert env["QUERY_STRING"] == "x=1&y=%41"
    assert env["CONTENT_TYPE"] == "text/plain"
    assert env["CONTENT_LENGTH"] == "5"
    assert "HTTP_CONTENT_TYPE" not in env and "HTTP_CONTENT_LENGTH" not in env
    assert env["HTTP_HOST"] == "example.test:8080"
    assert env["HTTP_USER_AGENT"] == "tester/1"
    # Repeated headers joined as gunicorn, wsgiref and Werkzeug join them;
    # cookies as one Cookie header carries them.
    assert env["HTTP_X_DUP"] == "a,b"
    assert env["HTTP_COOKIE"] == "a=1; b=2"
    assert "HTTP_X_SPOOF" not in env  # names with '_' are dropped
    assert env["SERVER_NAME"] == "127.0.0.1"
    assert env["SERVER_PORT"] == str(server.port)
    assert env["SERVER_PROTOCOL"] == "HTTP/1.1"
    assert env["REMOTE_ADDR"] == "127.0.0.1"
    assert int(env["REMOTE_PORT"]) > 0
    assert env["wsgi.version"] == [1, 0]
    assert env["wsgi.url_scheme"] == "http"
    assert env["wsgi.multithread"] is True
    assert env["wsgi.multiprocess"] is False
    assert env["wsgi.run_once"] is False
    assert env["has_file_wrapper"] is True


def test_raw_utf8_in_the_target_reaches_the_app(wsgi_server):
    # Some clients send UTF-8 unescaped; the bytes pass through as sent.
    server = wsgi_server()
    with server.connect() as s:
        s.sendall(b"GET /environ/caf\xc3\xa9?q=\xc3\xa9 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        r = m0test.ResponseReader(s).read()
    assert r.status == 200, (r.body, server.output())
    env = json.loads(r.body)
    # PEP 3333: each byte one latin-1 character, so the app recovers the
    # UTF-8 with .encode("latin-1").decode("utf-8").
    assert env["PATH_INFO"] == "/environ/caf\u00c3\u00a9"
    assert env["PATH_INFO"].encode("latin-1").decode("utf-8") == "/environ/caf\u00e9"
    assert env["QUERY_STRING"] == "q=\u00c3\u00a9"
    assert env["RAW_URI"] == "/environ/caf\u00c3\u00a9?q=\u00c3\u00a9"


def test_environ_http10_and_no_body(wsgi_server):
    server = wsgi_server()
    with server.connect() as s:
        s.sendall(b"GET /environ HTTP/1.0\r\nHost: h\r\n\r\n")
        r = m0test.ResponseReader(s).read()
    env = json.loads(r.body)
    assert env["SERVER_PROTOCOL"] == "HTTP/1.0"
    assert env["QUERY_STRING"] == ""
    assert "CONTENT_TYPE" not in env
    assert env.get("CONTENT_LENGTH", "") in ("", "0")


def test_wsgi_errors_goes_to_the_log(wsgi_server):
    server = wsgi_server()
    get_json(server, "/environ?mark=MARK-42")
    server.wait_for_log("errors-stream-line MARK-42")


def test_url_prefix_sets_script_name(wsgi_server):
    server = wsgi_server(extra="  url_prefix: /mount/\n")
    env = get_json(server, "/mount/environ/x")
    assert env["SCRIPT_NAME"] == "/mount"
    assert env["PATH_INFO"] == "/environ/x"
    assert m0test.request(server.port, path="/other").status == 404
    assert m0test.request(server.port, path="/mountain").status == 404


BODY = b"line one\nline two\nthree"


@pytest.mark.parametrize("mode,expected", [
    ("read", {"parts": ["lin", "e one\nline two\nthree", ""]}),
    ("readline", {"lines": ["line one\n", "line two\n", "three"]}),
    ("readline-limit", {"first": "line", "rest": " one\nline two\nthree"}),
    ("readlines", {"lines": ["line one\n", "line two\n", "three"]}),
    ("iter", {"lines": ["line one\n", "line two\n", "three"]}),
])
def test_wsgi_input(wsgi_server, mode, expected):
    server = wsgi_server()
    assert get_json(server, f"/input?mode={mode}", method="POST", body=BODY) == expected


def test_wsgi_input_chunked_request_body(wsgi_server):
    server = wsgi_server()
    raw = (b"POST /input?mode=all HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
           b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n")
    with server.connect() as s:
        s.sendall(raw)
        r = m0test.ResponseReader(s).read()
    assert r.status == 200, server.output()
    assert json.loads(r.body) == {"all": "hello, world"}


def test_single_chunk_body_has_content_length(wsgi_server):
    # Unvalidated: the validator wraps every body in an iterator.
    server = wsgi_server(app="wsgi_apps:router")
    r = m0test.request(server.port, path="/hello")
    assert r.status == 200
    assert r.body == b"Hello, World!"
    assert r.header("Content-Length") == "13"
    assert r.header("Transfer-Encoding") is None


def test_list_body_is_joined_with_content_length(wsgi_server):
    server = wsgi_server(app="wsgi_apps:router")
    r = m0test.request(server.port, path="/list")
    assert r.body == b"abcdef" and r.header("Content-Length") == "6"


def test_one_chunk_iterator_with_length_is_not_chunked(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/one-chunk-iter")
    assert r.body == b"12345" and r.header("Content-Length") == "5"


def test_iterator_without_length_is_chunked(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/stream?n=4")
    assert r.status == 200
    assert r.header("Transfer-Encoding") == "chunked"
    assert r.body == b"chunk0;chunk1;chunk2;chunk3;"


def test_iterator_with_length_streams_length_delimited(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/stream-length")
    assert r.header("Content-Length") == "9"
    assert r.body == b"abcdefghi"


def test_keep_alive_across_response_shapes(wsgi_server):
    server = wsgi_server()
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for path, body in [("/hello", b"Hello, World!"), ("/stream?n=2", b"chunk0;chunk1;"),
                           ("/list", b"abcdef"), ("/write", b"written-1;written-2;returned"),
                           ("/hello", b"Hello, World!")]:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
            r = reader.read()
            assert (r.status, r.body) == (200, body)


def open_gate(fifo):
    """Opens the FIFO a gated app waits on, once the app reads it, and
    closes it: the app goes on. Returns False while the app is not there."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as e:
        if e.errno == errno.ENXIO:  # no reader yet
            return False
        raise
    return True


def test_generator_chunks_arrive_as_produced(wsgi_server, executor, tmp_path):
    server = wsgi_server()
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    with server.connect(timeout=10) as s:
        s.sendall(f"GET /stream-gated?fifo={fifo} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n".encode())
        # The app makes its second chunk only after the first has reached
        # the client: a server holding chunks back never sends the first.
        s.settimeout(m0test.scaled(10))
        first = b""
        while b"chunk0;" not in first:
            data = s.recv(4096)
            assert data, "connection closed before the first chunk"
            first += data
        assert b"chunk1;" not in first
        server.wait_until(lambda: open_gate(fifo), what="the app to wait at its gate")
        rest = m0test.recv_until_closed(s, timeout=10)
    assert b"chunk1;" in first + rest


def test_write_callable(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/write")
    assert r.status == 200
    assert r.body == b"written-1;written-2;returned"


def test_file_wrapper_sendfile(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/file")
    assert r.status == 200
    assert r.header("Content-Length") == str(len(PAYLOAD))
    assert r.body == PAYLOAD


def test_file_wrapper_starts_at_the_file_position(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/file?skip=1000")
    assert r.body == PAYLOAD[1000:]


def test_file_wrapper_without_fd_is_iterated(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/file-bytesio")
    assert r.status == 200 and r.body == b"from-bytesio" * 3


def test_exc_info_replaces_unsent_response(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, path="/exc-info-replace")
    assert r.status == 503
    assert r.body == b"replaced by the error page"


def test_status_without_body(wsgi_server):
    # The app says "<code> Custom": the status line carries the standard
    # reason phrase for the code (frontend-wsgi README).
    server = wsgi_server()
    r = m0test.request(server.port, path="/status?code=204")
    assert (r.status, r.reason, r.body) == (204, "No Content", b"")
    r = m0test.request(server.port, path="/status?code=418")
    assert (r.status, r.reason, r.body) == (418, "I'm a teapot", b"status")


def test_head_request(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, method="HEAD", path="/hello")
    assert r.status == 200 and r.body == b""


def closed_count(server, tag):
    return get_json(server, f"/closed?tag={tag}")["count"]


def test_close_is_called(wsgi_server):
    server = wsgi_server()
    assert m0test.request(server.port, path="/stream?n=3&tag=normal").status == 200
    assert m0test.request(server.port, path="/stream-length").status == 200
    assert closed_count(server, "normal") == 1
    assert closed_count(server, "stream-length") == 1


def test_close_is_called_when_client_disconnects(wsgi_server):
    server = wsgi_server()
    with server.connect() as s:
        s.sendall(b"GET /stream?n=40&delay=0.05&tag=gone HTTP/1.1\r\nHost: h\r\n\r\n")
        s.settimeout(5)
        s.recv(4096)  # the response started; now vanish mid-body
    server.wait_until(lambda: closed_count(server, "gone") == 1, what="close() of the abandoned response")
    assert m0test.request(server.port, path="/hello").status == 200


def test_many_requests_on_one_connection_reuse_objects(wsgi_server):
    """The per-thread recycled input/start_response objects must never leak
    one request's state into the next."""
    server = wsgi_server()
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for i in range(50):
            body = f"body-{i}".encode()
            s.sendall(f"POST /input?mode=all HTTP/1.1\r\nHost: h\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                      + body)
            r = reader.read()
            assert json.loads(r.body) == {"all": body.decode()}


def test_response_headers_never_carry_over_to_a_later_response(wsgi_server):
    """Response header lists are reused between requests: each response has
    exactly the headers its app gave, more or fewer than the one before."""
    server = wsgi_server()
    for conn in range(2):
        with server.connect() as s:
            reader = m0test.ResponseReader(s)
            for n in (3, 1, 0, 5, 2, 0):
                tag = f"c{conn}n{n}"
                s.sendall(f"GET /headers?n={n}&tag={tag} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
                r = reader.read()
                assert (r.status, r.body) == (200, tag.encode())
                extra = sorted((k, v) for k, v in r.headers if k.lower().startswith("x-h"))
                assert extra == [(f"X-H{i}", f"{tag}-value-of-header-{i}") for i in range(n)]
                assert r.header("Content-Type") == "text/plain"
                s.sendall(b"GET /status?code=204 HTTP/1.1\r\nHost: h\r\n\r\n")
                r = reader.read()
                assert r.status == 204
                assert not [k for k, _ in r.headers if k.lower().startswith("x-h") or k.lower() == "content-type"]


def test_app_shortcut_flag(m0_server):
    server = m0_server(None, "--app", "wsgi_apps:hello", cwd=APPS)
    r = m0test.request(server.port, path="/")
    assert (r.status, r.body) == (200, b"Hello, World!")


def test_head_keeps_the_declared_length(wsgi_server):
    server = wsgi_server()
    r = m0test.request(server.port, method="HEAD", path="/head-length")
    assert r.status == 200 and r.body == b""
    assert r.header("Content-Length") == "1234"
    r = m0test.request(server.port, path="/head-length")
    assert r.body == b"y" * 1234


def produced(server, tag):
    return get_json(server, f"/produced?tag={tag}")["count"]


def kernel_send_buffer_max():
    """The most a TCP socket may buffer for sending (tcp_wmem's maximum)."""
    with open("/proc/sys/net/ipv4/tcp_wmem") as f:
        return int(f.read().split()[2])


def test_streaming_waits_for_a_slow_client(wsgi_server, executor):
    if executor == "inline":
        pytest.skip("the inline executor runs the app on the reactor: it cannot wait for the socket")
    # Two pool threads: the waiting stream holds one, /produced needs the other.
    server = wsgi_server(extra="  stream_buffer: 1m\n")
    n, chunk = 64, 1 << 20  # /big's chunks
    rcvbuf = 64 * 1024
    # What may be produced beyond what the client read: the stream buffer
    # plus the chunk that crosses it, the chunk the app holds while it
    # waits, and what the kernel buffers on both ends (the receive side
    # doubles its setting for bookkeeping).
    ahead_bound = 3 * chunk + kernel_send_buffer_max() + 2 * rcvbuf
    assert ahead_bound < n * chunk // 2  # else this test could not tell
    with server.connect(timeout=20) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.sendall(f"GET /big?n={n}&tag=slow-reader HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n".encode())
        s.settimeout(m0test.scaled(20))
        # The client reads one piece between two looks at the producer: at
        # every look, production is held to what the client has taken. An
        # app that is not held back makes its 64 MiB long before the
        # client's first megabytes.
        received, looks = 0, 0
        server.wait_until(lambda: produced(server, "slow-reader") > 0, what="the app to start producing")
        while True:
            made = produced(server, "slow-reader")
            assert made * chunk - received <= ahead_bound, (made, received, looks)
            looks += 1
            data = s.recv(256 * 1024)
            if not data:
                break
            received += len(data)
    assert received > n * chunk  # every chunk arrived
    assert looks > n  # the producer was looked at all along
    assert produced(server, "slow-reader") == n


def test_client_gone_stops_the_producer(wsgi_server, executor):
    if executor == "inline":
        pytest.skip("the inline executor runs the app on the reactor: it cannot see the client go")
    server = wsgi_server(extra="  stream_buffer: 1m\n")
    n = 256
    with server.connect(timeout=10) as s:
        s.sendall(f"GET /big?n={n}&tag=vanish HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        s.recv(65536)
    server.wait_until(lambda: closed_count(server, "vanish") == 1, what="close() of the abandoned response")
    assert produced(server, "vanish") < n // 2
