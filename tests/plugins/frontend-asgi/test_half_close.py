"""A client that shuts down its sending side (FIN) after its request: an app
awaiting receive() after its body hears http.disconnect (as uvicorn and
Granian say it), yet the half-closed client still reads, so an app that
answers anyway gets its response to it."""
import socket

import m0test
from conftest import asgi_config, needs_asgi

pytestmark = needs_asgi

POLL = b"GET /poll HTTP/1.1\r\nHost: t\r\n\r\n"
UPLOAD = b"POST /poll HTTP/1.1\r\nHost: t\r\nContent-Length: 20000\r\n\r\n" + b"u" * 20_000


def test_fin_while_the_app_awaits_receive_is_http_disconnect(m0_server):
    server = m0_server(asgi_config("body_apps:long_poll"))
    with server.connect() as s:
        s.sendall(POLL)
        server.wait_for_log("long_poll: waiting")
        s.shutdown(socket.SHUT_WR)
        server.wait_for_log("long_poll: woke with http.disconnect")
        # The app returned without answering, as a long poll told its client
        # left does: the connection closes without a response, and that is
        # no app error.
        assert m0test.recv_until_closed(s, timeout=10) == b""
    # The next connection is served (and, the loop running one step at a
    # time, the first Task has finished by then).
    with server.connect() as s:
        s.sendall(POLL)
        server.wait_for_log("long_poll: waiting", count=2)
        s.shutdown(socket.SHUT_WR)
        server.wait_for_log("long_poll: woke with http.disconnect", count=2)
    out = server.output()
    assert "returned without" not in out and "Traceback" not in out, out


def half_closed_exchange(server, request, wait_first):
    with server.connect() as s:
        s.sendall(request)
        if wait_first:
            # The FIN reaches a receive() already pending...
            server.wait_for_log("answer_after_disconnect: waiting")
        # ...or, sent with the request, a later one.
        s.shutdown(socket.SHUT_WR)
        r = m0test.ResponseReader(s, timeout=10).read()
        assert m0test.recv_until_closed(s, timeout=10) == b""  # closed after the response
        return r


def test_an_app_that_answers_after_the_disconnect_reaches_the_half_closed_client(m0_server):
    server = m0_server(asgi_config("body_apps:answer_after_disconnect"))
    for n, wait_first in enumerate((True, False), start=1):
        r = half_closed_exchange(server, POLL, wait_first)
        assert r.status == 200
        assert r.body == b"answered after http.disconnect, then http.disconnect"
        server.wait_for_log("answer_after_disconnect: woke with http.disconnect", count=n)
    assert "Traceback" not in server.output()


def test_fin_after_a_streamed_request_body_is_http_disconnect(m0_server):
    # A body above input_buffer streams through receive(): the FIN that
    # follows its last byte is no cut-short upload, and is heard once the
    # body was handed out.
    server = m0_server(asgi_config("body_apps:answer_after_disconnect", frontend_extra="  input_buffer: 4k\n"))
    r = half_closed_exchange(server, UPLOAD, wait_first=True)
    assert r.status == 200
    assert r.body == b"answered after http.disconnect, then http.disconnect"


def test_streamed_response_reaches_a_half_closed_client(m0_server):
    # An app that does not ask receive() after its body streams on.
    server = m0_server(asgi_config("body_apps:with_trailers"))
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        r = m0test.ResponseReader(s, timeout=10).read()
    assert r.status == 200
    assert r.body == b"first;second;third"
