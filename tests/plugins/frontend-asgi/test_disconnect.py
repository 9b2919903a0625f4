"""http.disconnect and the send() exception (ASGI HTTP spec 2.4): the app
learns that its client went away while it awaits receive() with nothing
written, while it streams a response, and receive() after a complete
response says http.disconnect."""
import socket

import m0test
from conftest import asgi_config, needs_asgi

pytestmark = needs_asgi


def reset(sock):
    """Closes `sock` with a TCP reset: the client is gone (a FIN alone is a
    half-close, which still gets its response)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


def test_disconnect_while_the_app_awaits_receive(m0_server):
    server = m0_server(asgi_config("body_apps:long_poll"))
    s = server.connect()
    s.sendall(b"GET /poll HTTP/1.1\r\nHost: t\r\n\r\n")
    server.wait_for_log("long_poll: waiting")
    reset(s)
    server.wait_for_log("long_poll: woke with http.disconnect")
    # Returning without a response to a client that is gone is no app error.
    # (The loop runs one step at a time: once a second request got as far,
    # the first one's Task has finished.)
    s2 = server.connect()
    s2.sendall(b"GET /poll HTTP/1.1\r\nHost: t\r\n\r\n")
    server.wait_for_log("long_poll: waiting", count=2)
    assert "returned without" not in server.output()
    assert "Traceback" not in server.output()
    reset(s2)
    server.wait_for_log("long_poll: woke with http.disconnect", count=2)


def test_disconnect_while_streaming_makes_send_raise_an_oserror(m0_server):
    server = m0_server(asgi_config("body_apps:slow_stream"))
    s = server.connect()
    s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    assert s.recv(1024).startswith(b"HTTP/1.1 200")
    server.wait_for_log("slow_stream: streaming")
    reset(s)
    server.wait_for_log("slow_stream: send raised ClientDisconnected (OSError: True)")
    # The spec asks servers not to log the exception they raised.
    assert "Traceback" not in server.output()


def test_receive_after_a_streamed_response_says_disconnect(m0_server):
    server = m0_server(asgi_config("body_apps:digest", frontend_extra="  input_buffer: 4k\n"))
    body = b"q" * 20_000
    r = m0test.request(server.port, "POST", "/", body=body)
    assert r.status == 200
    server.wait_for_log("digest: after the response http.disconnect")
