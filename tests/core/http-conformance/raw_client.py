"""Raw-socket client for the conformance suite: sends request bytes whole,
byte by byte, or in random splits, and reads responses strictly enough to
catch framing errors (a response with both Content-Length and chunked, a
body longer than announced, a connection left open after an error)."""
import random
import select
import socket
import time

from m0test import scaled

# How long a case waits for a response: long enough for a loaded machine,
# short enough that an engine waiting for bytes that never come fails fast.
# Both are scaled (M0_TEST_TIMEOUT_SCALE) where they are used.
RESPONSE_TIMEOUT = 3.0
# How long the server has to close the connection after an error response.
CLOSE_TIMEOUT = 3.0
# Pause between the pieces of a split request, so each piece reaches the
# server in its own read (loopback otherwise coalesces them).
PIECE_PAUSE = 0.0005
# Byte-by-byte sends pause only for the first bytes: enough to split every
# element of a head, without making a 9000-byte target take seconds.
BYTEWISE_PAUSED_BYTES = 600

MODES = ("whole", "bytewise", "split")


class ProtocolError(AssertionError):
    """The server's bytes are not a well-formed HTTP/1.1 response."""


class Response:
    def __init__(self, version, status, reason, headers, body):
        self.version, self.status, self.reason = version, status, reason
        self.headers, self.body = headers, body

    def header(self, name):
        values = self.all(name)
        return values[0] if values else None

    def all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def connection_tokens(self):
        return {t.strip().lower() for v in self.all("Connection") for t in v.split(",") if t.strip()}

    def __repr__(self):
        return f"<{self.version} {self.status} {self.reason!r} headers={self.headers} body={self.body[:200]!r}>"


def pieces_for(mode, data, rng):
    """The pieces `data` is sent in, and whether to pause between them."""
    if mode == "whole" or len(data) <= 1:
        return [data]
    if mode == "bytewise":
        return [data[i:i + 1] for i in range(len(data))]
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 12))))
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


class Connection:
    """One client connection with a receive buffer."""

    def __init__(self, port, timeout=RESPONSE_TIMEOUT):
        self.timeout = scaled(timeout)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False
        self.send_error = None

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _server_spoke(self):
        readable, _, _ = select.select([self.sock], [], [], 0)
        return bool(readable)

    def send(self, data, mode="whole", rng=None, stop_on_response=False):
        """Sends `data` in `mode`. A send the server refuses (reset) ends it
        quietly; with stop_on_response, so does the first byte from the server
        (a server may reject a request before it is complete)."""
        rng = rng or random.Random(0)
        pieces = pieces_for(mode, data, rng)
        sent = 0
        for i, piece in enumerate(pieces):
            if stop_on_response and i and self._server_spoke():
                return
            try:
                self.sock.sendall(piece)
            except OSError as e:  # EPIPE / ECONNRESET: the server gave up on us
                self.send_error = e
                return
            sent += len(piece)
            if len(pieces) > 1 and (mode != "bytewise" or sent <= BYTEWISE_PAUSED_BYTES):
                time.sleep(PIECE_PAUSE)

    def _fill(self, deadline):
        if self.eof:
            raise EOFError("connection closed by the server")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("no complete response")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            raise EOFError("connection closed by the server")
        self.buf += data

    def _line(self, deadline):
        while b"\r\n" not in self.buf:
            if len(self.buf) > 65536:
                raise ProtocolError("response line longer than 64k")
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n, deadline):
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self, method="GET", timeout=None, keep_interim=False):
        """Reads one response; 1xx interim responses are skipped unless
        keep_interim. Raises ProtocolError on a malformed one."""
        deadline = time.monotonic() + (scaled(timeout) if timeout else self.timeout)
        while True:
            resp = self._read_one(method, deadline)
            if keep_interim or not 100 <= resp.status < 200 or resp.status == 101:
                return resp

    def _read_one(self, method, deadline):
        status_line = self._line(deadline).decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise ProtocolError(f"bad status line {status_line!r}")
        version, status, reason = parts[0], int(parts[1]), (parts[2] if len(parts) > 2 else "")
        headers = []
        while True:
            line = self._line(deadline)
            if not line:
                break
            if b":" not in line or line[:1] in (b" ", b"\t"):
                raise ProtocolError(f"bad response header line {line!r}")
            k, v = line.decode("latin-1").split(":", 1)
            if k != k.strip():
                raise ProtocolError(f"whitespace around response header name {k!r}")
            headers.append((k, v.strip(" \t")))
        resp = Response(version, status, reason, headers, b"")
        te, cls = resp.all("Transfer-Encoding"), resp.all("Content-Length")
        # RFC 9112 6.1: a sender MUST NOT send Content-Length with Transfer-Encoding.
        if te and cls:
            raise ProtocolError(f"response with both Transfer-Encoding and Content-Length: {resp!r}")
        if len(cls) > 1:
            raise ProtocolError(f"response with {len(cls)} Content-Length fields: {resp!r}")
        if 100 <= status < 200 or status in (204, 304) or method == "HEAD":
            # RFC 9110 8.6: no Content-Length in 1xx and 204 responses.
            if (100 <= status < 200 or status == 204) and (cls or te):
                raise ProtocolError(f"{status} response with framing headers: {resp!r}")
            return resp
        if te:
            if te[-1].split(",")[-1].strip().lower() != "chunked":
                raise ProtocolError(f"response transfer coding does not end in chunked: {resp!r}")
            body = b""
            while True:
                size_line = self._line(deadline).split(b";")[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    raise ProtocolError(f"bad chunk size line {size_line!r}") from None
                if size == 0:
                    while self._line(deadline):
                        pass
                    break
                body += self._exact(size, deadline)
                if self._exact(2, deadline) != b"\r\n":
                    raise ProtocolError("chunk data not followed by CRLF")
            resp.body = body
        elif cls:
            if not cls[0].isdigit():
                raise ProtocolError(f"bad response Content-Length {cls[0]!r}")
            resp.body = self._exact(int(cls[0]), deadline)
        else:
            # Close-delimited (RFC 9112 6.3 item 8).
            try:
                while True:
                    self._fill(deadline)
            except EOFError:
                pass
            resp.body, self.buf = self.buf, b""
        return resp

    def closed_by_server(self, timeout=CLOSE_TIMEOUT):
        """True if the server closes (FIN or RST) within `timeout` without
        sending anything more; False if it stays open. Extra bytes after the
        last response are a protocol error."""
        if self.buf:
            raise ProtocolError(f"bytes after the last response: {self.buf[:200]!r}")
        if self.eof:
            return True
        deadline = time.monotonic() + scaled(timeout)
        try:
            self._fill(deadline)
        except EOFError:
            return True
        except socket.timeout:
            return False
        raise ProtocolError(f"bytes after the last response: {self.buf[:200]!r}")
