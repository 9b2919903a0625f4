"""Stopping m0 while application code does not return: after the drain
deadline, or a second signal, the process exits and says what it abandoned,
whatever a Python thread is doing."""
import signal

import m0test
from conftest import APPS
from support.wsgi_deployment import wsgi_config

# Bounds on how long an exit may take before the test calls it a hang. The
# fixed behaviour is about a second; the old one never exited.
EXIT_BOUND = 15.0


def config(app, drain_timeout):
    return wsgi_config(app, APPS, drain_timeout)


def wait_for_log(server, text):
    server.wait_for_log(text, timeout=15.0)


def read_until(sock, marker, timeout=15.0):
    sock.settimeout(timeout)
    data = b""
    while marker not in data:
        chunk = sock.recv(4096)
        assert chunk, f"connection closed before {marker!r}: {data!r}"
        data += chunk
    return data


def exit_code(server):
    return server.proc.wait(timeout=EXIT_BOUND)


def test_second_signal_stops_a_slowly_streaming_generator(m0_server):
    server = m0_server(config("shutdown_apps:sse_ticks", "2s"))
    with server.connect() as s:
        s.sendall(b"GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
        read_until(s, b"data: tick")
        server.send_signal(signal.SIGTERM)
        wait_for_log(server, "draining")
        server.send_signal(signal.SIGTERM)
        wait_for_log(server, "second signal")
        assert exit_code(server) == 0, server.output()


def test_drain_deadline_stops_a_slowly_streaming_generator(m0_server):
    server = m0_server(config("shutdown_apps:sse_ticks", "1s"))
    with server.connect() as s:
        s.sendall(b"GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
        read_until(s, b"data: tick")
        server.send_signal(signal.SIGTERM)
        assert exit_code(server) == 0, server.output()
    # The stream was cut at the deadline and counted.
    assert "force-closed 1" in server.output()


def test_second_signal_stops_a_view_that_sleeps(m0_server):
    server = m0_server(config("shutdown_apps:sleeps", "20s"))
    with server.connect() as s:
        s.sendall(b"GET /?60 HTTP/1.1\r\nHost: h\r\n\r\n")
        wait_for_log(server, "sleeping 60.0 s")
        server.send_signal(signal.SIGTERM)
        wait_for_log(server, "draining")
        # The request in flight holds the drain...
        assert server.proc.poll() is None
        server.send_signal(signal.SIGTERM)
        assert exit_code(server) == 0, server.output()
        # ...and the client learns it will not get an answer.
        assert m0test.recv_until_closed(s, timeout=5) == b""
    out = server.output()
    assert "jobs abandoned 1" in out
    assert "leaving 1 thread(s) inside application code" in out


def test_drain_deadline_abandons_a_view_that_sleeps(m0_server):
    server = m0_server(config("shutdown_apps:sleeps", "1s"))
    with server.connect() as s:
        s.sendall(b"GET /?30 HTTP/1.1\r\nHost: h\r\n\r\n")
        wait_for_log(server, "sleeping 30.0 s")
        server.send_signal(signal.SIGTERM)
        # Exits long before the view's 30 s are up.
        assert exit_code(server) == 0, server.output()
        assert m0test.recv_until_closed(s, timeout=5) == b""
    out = server.output()
    assert "force-closed 1" in out and "jobs abandoned 1" in out
