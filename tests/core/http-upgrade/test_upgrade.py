"""An exchange answers 101 and hands the connection over as a byte stream:
bytes sent after the head (even in the same packet) are echoed back, drain
tells the stream's owner to finish, and the drain deadline closes a stream
that does not."""
import os
import signal

import m0test

PLUGIN_DIR = os.path.join(m0test.BUILD_DIR, "test-plugins-upgrade")


def echo_config(drain_timeout="20s"):
    return (f"plugins:\n  path: [{PLUGIN_DIR!r}]\nfrontend:\n  type: upgrade_echo\n"
            f"server:\n  drain_timeout: {drain_timeout}\n")


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        if not more:
            break
        data += more
    return data


def upgrade(server, query=b"", extra=b""):
    s = server.connect()
    s.sendall(b"GET /echo" + query + b" HTTP/1.1\r\nHost: t\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n" + extra)
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = s.recv(1)
        assert byte, head
        head += byte
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 101 Switching Protocols", head
    assert "Upgrade: echo" in lines and "Connection: upgrade" in lines, head
    return s


def assert_closed(sock):
    sock.settimeout(30)
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass


def test_bytes_after_101_are_echoed(m0_server):
    server = m0_server(echo_config())
    with upgrade(server, extra=b"early") as s:
        assert recv_exact(s, 5) == b"early"  # buffered with the head, delivered first
        for i in range(20):
            msg = b"message %d " % i * 100
            s.sendall(msg)
            assert recv_exact(s, len(msg)) == msg


def test_sigterm_tells_the_stream_to_finish(m0_server):
    server = m0_server(echo_config())
    with upgrade(server) as s:
        s.sendall(b"ping")
        assert recv_exact(s, 4) == b"ping"
        server.send_signal(signal.SIGTERM)
        assert recv_exact(s, 4) == b"bye\n"
        assert_closed(s)
    assert server.stop(timeout=30) == 0
    assert "force-closed 0" in server.output(), server.output()


def test_drain_deadline_closes_a_stream_that_does_not_finish(m0_server):
    server = m0_server(echo_config(drain_timeout="1s"))
    with upgrade(server, query=b"?ignore_drain") as s:
        s.sendall(b"ping")
        assert recv_exact(s, 4) == b"ping"
        server.send_signal(signal.SIGTERM)
        assert_closed(s)
    server.stop(timeout=30)
    assert "force-closed 1" in server.output(), server.output()
