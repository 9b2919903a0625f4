"""The http.response.trailers extension (ASGI extensions, "HTTP Trailers"):
advertised in the scope, trailers=True in http.response.start, trailer
fields after the last chunk of a chunked response, sent only to a client
that asked for them with TE: trailers. Read with a raw socket that parses
the chunked framing itself."""
import hashlib

import m0test
from conftest import asgi_config, needs_asgi

pytestmark = needs_asgi

BODY = b"first;second;third"


class chunked_reader:
    """The head, the de-chunked body and the trailer fields of one response."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("closed before the response ended")
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("closed in a chunk")
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read(self):
        status = self._line()
        headers = {}
        while line := self._line():
            name, value = line.split(b":", 1)
            headers[name.strip().lower()] = value.strip()
        body, trailers = b"", []
        if headers.get(b"transfer-encoding") == b"chunked":
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    break
                body += self._exact(size)
                assert self._exact(2) == b"\r\n"
            while line := self._line():
                name, value = line.split(b":", 1)
                trailers.append((name.strip().lower(), value.strip()))
        else:
            body = self._exact(int(headers[b"content-length"]))
        return status, headers, body, trailers


def get(server, path, te=True):
    with server.connect() as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: t\r\n%s\r\n" % (path.encode(), b"TE: trailers\r\n" if te else b""))
        response = chunked_reader(s).read()
        # Nothing follows the response on the connection.
        s.sendall(b"GET /?length=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert chunked_reader(s).read()[0] == b"HTTP/1.1 200 OK"
    return response


def test_trailer_fields_follow_the_last_chunk(m0_server):
    server = m0_server(asgi_config("body_apps:with_trailers"))
    status, headers, body, trailers = get(server, "/")
    assert status == b"HTTP/1.1 200 OK"
    assert headers[b"transfer-encoding"] == b"chunked"
    assert headers[b"trailer"] == b"x-digest, x-count"
    assert body == BODY
    # Both http.response.trailers messages, in order.
    assert trailers == [(b"x-digest", hashlib.sha256(BODY).hexdigest().encode()), (b"x-count", b"3")]


def test_no_trailers_for_a_client_that_did_not_ask(m0_server):
    server = m0_server(asgi_config("body_apps:with_trailers"))
    status, headers, body, trailers = get(server, "/", te=False)
    assert (body, trailers) == (BODY, [])


def test_a_length_delimited_response_drops_its_trailers(m0_server):
    server = m0_server(asgi_config("body_apps:with_trailers"))
    status, headers, body, trailers = get(server, "/?length=1")
    assert headers[b"content-length"] == str(len(BODY)).encode()
    assert (body, trailers) == (BODY, [])


def test_trailers_not_announced_in_the_start_are_an_app_error(m0_server):
    server = m0_server(asgi_config("body_apps:with_trailers"))
    with server.connect() as s:
        s.sendall(b"GET /?unasked=1 HTTP/1.1\r\nHost: t\r\nTE: trailers\r\nConnection: close\r\n\r\n")
        raw = m0test.recv_until_closed(s)
    # The response was complete with its last body message; the stray
    # trailers message after it is logged with the app's name.
    assert raw.endswith(b"5\r\nthird\r\n0\r\n\r\n")
    server.wait_for_log("http.response.trailers sent without trailers=True")
    assert "asgi: body_apps:with_trailers" in server.output()
