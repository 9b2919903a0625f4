"""Applications that break PEP 3333 get a 500 (or, once the response has
started, a cut connection), a traceback in the log, and the server goes on
serving. Nothing an app passes reaches the wire unchecked."""
import socket

import pytest

import m0test


INTERNAL_ERROR_BODY = b"Internal Server Error\n"



# traceback: the error went through application code, so its frames are logged
# (errors the server finds in what the app returned have no Python frames).
@pytest.mark.parametrize("path,logged,traceback", [
    ("/raise", "RuntimeError: boom from the app", True),
    ("/str-body", "TypeError: the application's body contains str, not bytes", False),
    ("/bad-status", "invalid status", True),
    ("/status-crlf", "invalid status", True),
    ("/header-crlf", "contains CR, LF or NUL", True),
    ("/header-name", "invalid header name", True),
    ("/no-start-response", "without calling start_response", False),
    ("/no-start-response-iter", "start_response() was not called", False),
    ("/twice", "second time without exc_info", True),
    ("/raise-in-iter", "ValueError: before the first chunk", True),
])
def test_bad_app_gets_500_and_traceback(wsgi_server, path, logged, traceback):
    server = wsgi_server(app="wsgi_apps:bad_app")
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        r = reader.read()
        assert r.status == 500
        # The traceback is for the log only: the client learns nothing of the app.
        assert r.body == INTERNAL_ERROR_BODY, r.body
        raw_headers = " ".join(f"{k}: {v}" for k, v in r.headers)
        assert "Injected" not in raw_headers and "X-Evil" not in raw_headers
        # Same connection keeps working.
        s.sendall(b"GET /ok HTTP/1.1\r\nHost: h\r\n\r\n")
        r = reader.read()
        assert (r.status, r.body) == (200, b"still serving")
    server.wait_for_log(logged)
    assert f"GET {path}" in server.output()  # the log line names the request
    if traceback:
        assert "Traceback (most recent call last)" in server.output()


def test_error_after_headers_sent_cuts_the_response(wsgi_server):
    """exc_info after the first chunk re-raises: the client must not mistake the
    cut response for a complete one."""
    server = wsgi_server(app="wsgi_apps:bad_app")
    with server.connect() as s:
        s.sendall(b"GET /exc-info-after-send HTTP/1.1\r\nHost: h\r\n\r\n")
        reader = m0test.ResponseReader(s)
        with pytest.raises((EOFError, ConnectionError)):
            reader.read()
    server.wait_for_log("KeyError: 'late failure'")
    assert m0test.request(server.port, path="/ok").body == b"still serving"


def test_str_chunk_mid_stream_cuts_the_response(wsgi_server):
    server = wsgi_server(app="wsgi_apps:bad_app")
    with server.connect() as s:
        s.sendall(b"GET /str-chunk HTTP/1.1\r\nHost: h\r\n\r\n")
        with pytest.raises((EOFError, ConnectionError)):
            m0test.ResponseReader(s).read()
    server.wait_for_log("TypeError")
    assert m0test.request(server.port, path="/ok").status == 200


def test_close_raising_is_logged_response_kept(wsgi_server):
    server = wsgi_server(app="wsgi_apps:bad_app")
    r = m0test.request(server.port, path="/close-raises")
    assert (r.status, r.body) == (200, b"body")
    server.wait_for_log("RuntimeError: close failed")


def test_many_failures_do_not_hurt_the_server(wsgi_server):
    server = wsgi_server(app="wsgi_apps:bad_app")
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for i in range(100):
            path = ["/raise", "/str-body", "/header-crlf", "/twice"][i % 4]
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
            assert reader.read().status == 500
    assert m0test.request(server.port, path="/ok").status == 200


def test_fields_the_engine_owns_are_dropped(wsgi_server):
    # frontend-wsgi README: Transfer-Encoding, Connection, Keep-Alive, Date and
    # Server from the app are dropped.
    server = wsgi_server(app="wsgi_apps:bad_app")
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        s.sendall(b"GET /engine-headers HTTP/1.1\r\nHost: h\r\n\r\n")
        r = reader.read()
        assert (r.status, r.body, r.header("X-Kept")) == (200, b"engine headers", "yes")
        assert r.header("Keep-Alive") is None and r.header("Transfer-Encoding") is None
        assert r.header("Server") != "from-the-app"
        assert "1970" not in " ".join(v for k, v in r.headers if k.lower() == "date")
        # The app's "Connection: close" is not the engine's: the connection stays.
        assert (r.header("Connection") or "").lower() != "close"
        s.sendall(b"GET /ok HTTP/1.1\r\nHost: h\r\n\r\n")
        assert reader.read().body == b"still serving"
