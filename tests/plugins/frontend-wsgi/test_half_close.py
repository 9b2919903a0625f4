"""The half-close rule: a client that shuts down its sending side after its
request (shutdown(SHUT_WR)) still gets the whole response, streamed or not,
then the connection closes. And the close is m0's alone: a program the app
started does not hold the connection open."""
import json
import os
import signal
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


def test_a_program_the_app_starts_does_not_hold_the_connection_open(wsgi_server):
    # Client connections are close-on-exec: the child (alive for 300 s)
    # inherits none, so m0's close reaches the client at once.
    server = wsgi_server()
    with server.connect() as s:
        s.sendall(b"GET /spawn HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        r = m0test.ResponseReader(s).read()
        assert r.status == 200
        pid = json.loads(r.body)["pid"]
        try:
            s.settimeout(60)
            assert s.recv(1) == b""  # without close-on-exec: only when the child exits
        finally:
            os.kill(pid, signal.SIGKILL)
