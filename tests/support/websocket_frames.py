"""Raw WebSocket frames for end-to-end tests: what a well-behaved client
never sends, a client that reads exactly when the test says so, and one
that vanishes without a close frame."""
import base64
import os
import struct

MASK = b"\x11\x22\x33\x44"


def client_frame(opcode, payload, fin=True, masked=True):
    head = bytes([(0x80 if fin else 0) | opcode])
    mask_bit = 0x80 if masked else 0
    n = len(payload)
    if n < 126:
        head += bytes([mask_bit | n])
    elif n < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", n)
    if not masked:
        return head + payload
    # XOR as one big integer: megabytes of payload mask in milliseconds.
    key = (MASK * (n // 4 + 1))[:n]
    return head + MASK + (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        if not more:
            raise EOFError(f"connection closed after {len(data)} of {n} bytes")
        data += more
    return data


def read_frame(sock):
    """(opcode, payload) of the next server frame (servers never mask)."""
    b0, b1 = recv_exact(sock, 2)
    assert b1 & 0x80 == 0, "a server frame must not be masked"
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", recv_exact(sock, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", recv_exact(sock, 8))[0]
    return b0 & 0x0F, recv_exact(sock, n)


def read_close(sock):
    """(code, reason) of the next frame, which must be a close frame."""
    opcode, payload = read_frame(sock)
    assert opcode == 0x8, (opcode, payload)
    return struct.unpack("!H", payload[:2])[0], payload[2:].decode()


def raw_upgrade(server, path="/ws", headers="", sock=None):
    """A connection to `server` (an m0test.Server), or `sock`, after its 101
    answer to GET `path`."""
    s = sock or server.connect(timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{headers}\r\n").encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = s.recv(1)
        assert byte, head
        head += byte
    assert head.startswith(b"HTTP/1.1 101 "), head
    return s
