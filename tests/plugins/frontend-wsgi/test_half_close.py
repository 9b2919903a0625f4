"""The half-close rule: a client that shuts down its sending side after its
request (shutdown(SHUT_WR)) still gets the whole response, streamed or not,
then the connection closes."""
import socket

import m0test


def half_closed_request(server, path):
    with server.connect() as s:
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: t\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        r = m0test.ResponseReader(s).read()
        s.settimeout(5)
        assert s.recv(1) == b""  # closed after the response
        return r


def test_whole_response_reaches_a_half_closed_client(wsgi_server):
    server = wsgi_server()
    r = half_closed_request(server, b"/list")
    assert r.status == 200 and r.body == b"abcdef"


def test_streamed_response_reaches_a_half_closed_client(wsgi_server):
    server = wsgi_server()
    r = half_closed_request(server, b"/stream?n=5&delay=0.05&tag=half")
    assert r.status == 200
    assert r.body == b"".join(b"chunk%d;" % i for i in range(5))
