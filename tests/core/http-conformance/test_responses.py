"""Response-side rules of the HTTP/1.1 engine (RFC 9110/9112): no body where
none may be sent, framing never ambiguous, persistence as negotiated.

Fixed routes of the `http` frontend supply ordinary 204/304 answers; the
test-only `reflect` frontend supplies handlers that misbehave on purpose (a
body on a 204, their own framing headers, an aborted stream)."""
import json

import pytest

from reflect_server import reflect_config
from raw_client import Connection

ROUTES = """frontend:
  type: http
  routes:
    - path: /hello
      headers: {Content-Type: text/plain}
      body: "Hello, World!"
    - path: /nocontent
      status: 204
    - path: /notmodified
      status: 304
"""
HELLO = b"Hello, World!"


def req(target="/", method="GET", fields=b"", version=b"HTTP/1.1", host=True):
    return (method.encode() + b" " + target.encode() + b" " + version + b"\r\n" +
            (b"Host: example.com\r\n" if host else b"") + fields + b"\r\n")


@pytest.fixture
def routes(m0_server):
    return m0_server(ROUTES)


@pytest.fixture
def reflect(m0_server):
    return m0_server(reflect_config())


def test_head_sends_headers_but_no_body(routes):
    """RFC 9110 9.3.2: HEAD is GET without content; a stray body byte would
    corrupt the next pipelined response."""
    with Connection(routes.port) as c:
        c.send(req("/hello", "HEAD") + req("/hello"))
        head = c.read_response(method="HEAD")
        get = c.read_response()
    assert head.status == 200 and get.status == 200
    assert get.body == HELLO
    # RFC 9110 8.6: a Content-Length in a HEAD response is the GET's.
    assert head.header("Content-Length") in (None, str(len(HELLO)))


@pytest.mark.parametrize("target,status", [("/nocontent", 204), ("/notmodified", 304)])
def test_no_body_statuses(routes, target, status):
    """RFC 9110 15.3.5, 15.4.5: 204 and 304 end at the empty line after the
    header section; 204 carries no Content-Length (8.6)."""
    with Connection(routes.port) as c:
        c.send(req(target) + req("/hello"))
        first = c.read_response()
        second = c.read_response()
    assert first.status == status and first.body == b""
    assert second.status == 200 and second.body == HELLO


@pytest.mark.parametrize("status", [204, 304])
def test_engine_drops_handler_body_on_no_body_status(reflect, status):
    """The engine, not the handler, enforces the no-body rule (m0/http.hpp)."""
    with Connection(reflect.port) as c:
        c.send(req(f"/status/{status}") + req("/after"))
        first = c.read_response()
        second = c.read_response()
    assert first.status == status
    assert second.status == 200 and json.loads(second.body)["target"] == "/after"


@pytest.mark.parametrize("target", ["/", "/stream", "/stream-length", "/status/404"])
def test_head_on_every_response_kind_has_no_body(reflect, target):
    with Connection(reflect.port) as c:
        c.send(req(target, "HEAD") + req("/after"))
        c.read_response(method="HEAD")
        after = c.read_response()
    assert after.status == 200 and json.loads(after.body)["target"] == "/after"


def test_stream_without_length_is_chunked_on_http11(reflect):
    with Connection(reflect.port) as c:
        c.send(req("/stream"))
        r = c.read_response()  # the reader refuses Content-Length with chunked
    assert r.header("Transfer-Encoding").lower() == "chunked"
    assert json.loads(r.body)["target"] == "/stream"


def test_stream_without_length_is_close_delimited_on_http10(reflect):
    """RFC 9112 6.1: no Transfer-Encoding in a response to HTTP/1.0; the
    body then ends when the connection closes (6.3 item 8)."""
    with Connection(reflect.port) as c:
        c.send(req("/stream", version=b"HTTP/1.0", fields=b"Connection: keep-alive\r\n"))
        r = c.read_response()
        assert c.closed_by_server()
    assert r.header("Transfer-Encoding") is None
    assert json.loads(r.body)["target"] == "/stream"


def test_stream_with_length_is_length_delimited(reflect):
    with Connection(reflect.port) as c:
        c.send(req("/stream-length") + req("/after"))
        r = c.read_response()
        after = c.read_response()
    assert r.header("Transfer-Encoding") is None and int(r.header("Content-Length")) == len(r.body)
    assert json.loads(r.body)["target"] == "/stream-length"
    assert json.loads(after.body)["target"] == "/after"


def test_handler_framing_headers_never_reach_the_wire(reflect):
    """The engine owns Content-Length and Transfer-Encoding: a handler that
    sets them must not produce both, nor a length that lies."""
    with Connection(reflect.port) as c:
        c.send(req("/handler-framing") + req("/after"))
        r = c.read_response()
        after = c.read_response()
    assert json.loads(r.body)["target"] == "/handler-framing"
    # Connection management is the engine's: a handler's Keep-Alive is dropped.
    assert r.header("Keep-Alive") is None
    assert json.loads(after.body)["target"] == "/after"


@pytest.mark.parametrize("target", ["/abort", "/abort-length"])
def test_aborted_stream_is_not_a_complete_response(reflect, target):
    """Issue 6: an error mid-body closes the connection rather than sending a
    well-formed but truncated response."""
    with Connection(reflect.port) as c:
        c.send(req(target))
        with pytest.raises(EOFError):
            c.read_response()


def test_client_connection_close_is_honoured(reflect):
    with Connection(reflect.port) as c:
        c.send(req("/1", fields=b"Connection: close\r\n") + req("/2"))
        r = c.read_response()
        assert "close" in r.connection_tokens()
        assert c.closed_by_server()  # /2 is never answered


def test_server_connection_close_is_honoured(m0_server):
    """The server's own close (here: max_requests_per_connection) is announced
    with Connection: close on the last response, then carried out."""
    server = m0_server(reflect_config({"max_requests_per_connection": 2}))
    with Connection(server.port) as c:
        c.send(req("/1") + req("/2") + req("/3"))
        first, second = c.read_response(), c.read_response()
        assert "close" not in first.connection_tokens()
        assert "close" in second.connection_tokens()
        assert c.closed_by_server()


def test_http10_closes_unless_keep_alive_asked(reflect):
    """RFC 9112 9.3 and C.2.2: HTTP/1.0 persists only with Connection: keep-alive."""
    with Connection(reflect.port) as c:
        c.send(req("/", version=b"HTTP/1.0", host=False))
        r = c.read_response()
        assert "keep-alive" not in r.connection_tokens()
        assert c.closed_by_server()
    with Connection(reflect.port) as c:
        for i in range(3):
            c.send(req(f"/{i}", version=b"HTTP/1.0", host=False, fields=b"Connection: keep-alive\r\n"))
            r = c.read_response()
            assert json.loads(r.body)["target"] == f"/{i}"
            assert "keep-alive" in r.connection_tokens()
        assert not c.closed_by_server(timeout=0.5)


def test_response_version_and_date(reflect):
    """RFC 9110 2.5: answer with the highest version supported (HTTP/1.1) even
    to HTTP/1.0; 6.6.1: an origin server with a clock sends Date."""
    with Connection(reflect.port) as c:
        c.send(req("/", version=b"HTTP/1.0", host=False))
        r = c.read_response()
    assert r.version == "HTTP/1.1"
    assert r.header("Date") and r.header("Date").endswith(" GMT")


def test_expect_continue_is_answered_before_the_body(reflect):
    """RFC 9110 10.1.1: with a complete head and 100-continue, send 100 (or a
    final status) without waiting for the body."""
    with Connection(reflect.port) as c:
        c.send(req("/", "POST", b"Content-Length: 5\r\nExpect: 100-continue\r\n"))
        interim = c.read_response(keep_interim=True, timeout=2.0)
        assert interim.status == 100
        c.send(b"hello")
        r = c.read_response()
    assert r.status == 200 and json.loads(r.body)["body"] == "hello"


def test_expect_continue_is_not_sent_to_http10(reflect):
    """RFC 9110 10.1.1: a server MUST NOT send 100 to an HTTP/1.0 client."""
    with Connection(reflect.port) as c:
        c.send(req("/", "POST", b"Content-Length: 5\r\nExpect: 100-continue\r\n", version=b"HTTP/1.0", host=False))
        with pytest.raises(TimeoutError):
            c.read_response(keep_interim=True, timeout=0.5)
        c.send(b"hello")
        r = c.read_response(keep_interim=True)
    assert r.status == 200 and json.loads(r.body)["body"] == "hello"
