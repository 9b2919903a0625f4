"""A client that ends its upload early (FIN or reset inside a Content-Length
body) while the app reads wsgi.input: the OSError the read raises escapes the
app, yet the client going away is no application error. m0 logs one line
naming the request and how much of the body arrived (no traceback), answers
400 when the connection can still be written, and serves on."""
import re
import socket

import m0test
from conftest import wsgi_config

PROMISED = 100_000
SENT = 10_000
HEAD = b"POST /upload?n=1 HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % PROMISED


def cut_short_server(m0_server):
    # A body above input_buffer streams through wsgi.input while the app
    # reads; the pool runs the app off the reactor (with `inline` every body
    # is read whole before the app runs).
    return m0_server(wsgi_config("upload_apps:strict", "pool", "  input_buffer: 4k\n"))


def cut_short_line(how, query=b"n=1"):
    return re.compile(r"wsgi: POST /upload\?" + re.escape(query.decode()) + r": request body cut short: " + how +
                      r" after (\d+) of %d bytes \(not an application error\)" % PROMISED)


def assert_serves_on(server):
    body = b"k" * 20_000
    r = m0test.request(server.port, "POST", "/upload", body=body, timeout=30)
    assert (r.status, r.body) == (200, b"%d" % len(body))


def test_fin_mid_body_is_400_and_one_line_without_traceback(m0_server):
    server = cut_short_server(m0_server)
    with server.connect() as s:
        s.sendall(HEAD + b"z" * SENT)
        s.shutdown(socket.SHUT_WR)
        raw = m0test.recv_until_closed(s, timeout=30)
    assert raw.startswith(b"HTTP/1.1 400 "), raw
    line = server.wait_for_log(cut_short_line("the client shut down its sending side"))
    assert int(line.group(1)) == SENT  # every byte sent before the FIN arrived
    assert_serves_on(server)
    out = server.output()
    assert "Traceback" not in out and "the application raised" not in out, out
    assert len(cut_short_line(".*").findall(out)) == 1, out


def test_reset_mid_body_is_one_line_without_traceback(m0_server):
    server = cut_short_server(m0_server)
    s = server.connect()
    s.sendall(HEAD + b"z" * SENT)
    server.wait_until_read(s)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()  # a reset: nothing can be answered
    line = server.wait_for_log(cut_short_line("the connection was lost"))
    assert int(line.group(1)) <= SENT
    assert_serves_on(server)
    out = server.output()
    assert "Traceback" not in out and "the application raised" not in out, out


def test_an_exception_raised_from_the_body_error_is_no_app_error_either(m0_server):
    # Django raises UnreadablePostError from the OSError: still the client.
    server = cut_short_server(m0_server)
    with server.connect() as s:
        s.sendall(HEAD.replace(b"n=1", b"wrap=1") + b"z" * SENT)
        s.shutdown(socket.SHUT_WR)
        raw = m0test.recv_until_closed(s, timeout=30)
    assert raw.startswith(b"HTTP/1.1 400 "), raw
    server.wait_for_log(cut_short_line("the client shut down its sending side", b"wrap=1"))
    assert_serves_on(server)
    assert "Traceback" not in server.output()


def test_an_oserror_of_the_app_own_keeps_its_traceback(m0_server):
    # Told apart by identity, not by type: an OSError the app raises itself
    # after a whole body is its error, logged with the traceback, 500.
    server = cut_short_server(m0_server)
    r = m0test.request(server.port, "POST", "/upload?fail=1", body=b"f" * 20_000, timeout=30)
    assert r.status == 500
    server.wait_for_log("OSError: the application's own error")
    out = server.output()
    assert "Traceback (most recent call last)" in out and "request body cut short" not in out, out
