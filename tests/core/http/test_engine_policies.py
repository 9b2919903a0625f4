"""What HTTP/1.1 and HTTP/2 do alike, by one policy. An application's
response fields: the whitespace around a value is not sent (RFC 9110 5.5;
HTTP/2 forbids it), over HTTP/1.1 as over HTTP/2 (before, HTTP/1.1 sent
Django's cookies as "Set-Cookie:  csrftoken=..."). A request the engine
answers on its own is logged at info with its reason on both (HTTP/2 logged
it at debug). One header field over http.max_header_size is refused with 431
on both (HTTP/2 had only its list limit)."""
import os
import re
import sys

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "http2"))
import h2_support  # noqa: E402

CONFIG = (
    "frontend:\n"
    "  type: wsgi\n"
    "  app: \"field_apps:app\"\n"
    f"  chdir: {os.path.join(HERE, 'apps')}\n"
)


def test_http1_sends_values_without_the_whitespace_around_them(m0_server):
    server = m0_server(CONFIG, env={"VIRTUAL_ENV": sys.prefix})
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        raw = m0test.recv_until_closed(s, timeout=m0test.scaled(10))
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert b"\r\nSet-Cookie: csrftoken=abc; Path=/\r\n" in head, head
    assert b"\r\nX-Padded: value\r\n" in head + b"\r\n", head


def test_http2_sends_the_same_fields(m0_server):
    server = m0_server(CONFIG, env={"VIRTUAL_ENV": sys.prefix})
    client = h2_support.Client(server.port)
    r = client.get("/")
    assert r.status == 200
    assert r.header("set-cookie") == "csrftoken=abc; Path=/"
    assert r.header("x-padded") == "value"


def test_a_rejection_is_logged_alike_on_both_engines(m0_server):
    # A body over http.max_body_size, announced by Content-Length: each
    # engine answers 413 on its own and logs it at info with the reason.
    server = m0_server(CONFIG + "http: {max_body_size: 1k}\n", env={"VIRTUAL_ENV": sys.prefix})
    r = m0test.request(server.port, "POST", "/", headers={"Content-Length": "5000"}, body=b"")
    assert r.status == 413
    server.wait_for_log(re.compile(r"info: http: reactor \d+: 127\.0\.0\.1:\d+: rejected request: 413 Content Too "
                                   r"Large \("))
    client = h2_support.Client(server.port)
    stream = client.request("/", method="POST", headers=[("content-length", "5000")], end_stream=False)
    assert client.response(stream).status == 413
    server.wait_for_log(re.compile(r"info: .*: stream 1: rejected request: 413 Content Too Large \(Content-Length "
                                   r"over http\.max_body_size\)"))


def test_one_field_over_max_header_size_is_refused_on_both_engines(m0_server):
    server = m0_server(CONFIG, env={"VIRTUAL_ENV": sys.prefix})
    big, fits = "b" * 9000, "f" * 7000  # http.max_header_size: 8 KiB
    assert m0test.request(server.port, headers={"X-Big": big}).status == 431
    assert m0test.request(server.port, headers={"X-Fits": fits}).status == 200
    client = h2_support.Client(server.port)
    assert client.get("/", headers=[("x-fits", fits)]).status == 200
    assert client.get("/", headers=[("x-big", big)]).status == 431
    server.wait_for_log(re.compile(r"stream \d+: rejected request: 431 .*\(a request header field over "
                                   r"http\.max_header_size\)"))
