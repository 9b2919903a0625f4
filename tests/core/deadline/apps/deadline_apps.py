"""Views for the request-deadline tests: ones that get stuck in different
ways, and ones that must not be taken for stuck."""
import ctypes
import os
import threading
import time
from urllib.parse import parse_qs


def _arg(environ, name, default):
    return type(default)(parse_qs(environ.get("QUERY_STRING", "")).get(name, [default])[0])


def _text(start_response, body, status="200 OK"):
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(data)))])
    return [data]


def sleep_in_view(seconds):
    time.sleep(seconds)


def hold_the_gil(seconds):
    # A C call made with the GIL held (PyDLL keeps it): nothing else in this
    # interpreter runs meanwhile.
    ctypes.PyDLL(None).sleep(ctypes.c_uint(seconds))


def on_message(conn, message):
    if message == "stuck":
        sleep_in_view(600)
    conn.send(message)


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/ws":
        # A WebSocket hold: each message calls on_message on the pool, with a
        # deadline of its own; the view itself returns at once.
        environ["m0.hold"]([], "ws", on_message=on_message)
        start_response("200 OK", [])
        return []
    if path == "/fast":
        return _text(start_response, f"{os.getpid()} {threading.get_native_id()}")
    if path == "/sleep":
        seconds = _arg(environ, "s", 60.0)
        sleep_in_view(seconds)
        return _text(start_response, f"slept {seconds}")
    if path == "/gil":
        hold_the_gil(_arg(environ, "s", 30))
        return _text(start_response, "held")
    if path == "/extend":
        # The view asks for more time than server.request_timeout gives.
        environ["m0.request_timeout"](_arg(environ, "to", 30.0))
        time.sleep(_arg(environ, "s", 2.0))
        return _text(start_response, "extended")
    if path == "/lift":
        environ["m0.request_timeout"](None)
        time.sleep(_arg(environ, "s", 2.0))
        return _text(start_response, "lifted")
    if path == "/stall-stream":
        # A head and a first piece, then nothing.
        start_response("200 OK", [("Content-Type", "text/plain")])

        def body():
            yield b"first piece\n"
            time.sleep(_arg(environ, "s", 60.0))
            yield b"never\n"
        return body()
    if path == "/drip":
        # Produces a piece every `every` seconds: never silent for long.
        start_response("200 OK", [("Content-Type", "text/plain")])

        def body():
            for i in range(_arg(environ, "n", 6)):
                time.sleep(_arg(environ, "every", 0.3))
                yield b"piece %d\n" % i
        return body()
    if path == "/download":
        # Much more than the output buffer holds, for a client that reads slowly.
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        piece = b"d" * 65536
        return (piece for _ in range(_arg(environ, "n", 64)))
    if path == "/upload":
        size = 0
        stream = environ["wsgi.input"]
        while True:
            chunk = stream.read(4096)
            if not chunk:
                break
            size += len(chunk)
        return _text(start_response, str(size))
    return _text(start_response, "not found", "404 Not Found")
