"""WSGI applications for the streamed request body tests.

`count` reads wsgi.input the way the query asks (read(65536) pieces by
default) and answers with the byte count, a SHA-256 and what the environ said
about the body; `strict` reads it and lets a read error escape; `ignore`
answers without reading it.
"""
import hashlib
import json
from urllib.parse import parse_qs


def _read_all(stream, mode):
    if mode == "pieces":
        while True:
            piece = stream.read(65536)
            if not piece:
                return
            yield piece
    elif mode == "all":
        yield stream.read()
    elif mode == "readline":
        while True:
            line = stream.readline()
            if not line:
                return
            yield line
    elif mode == "readline_limit":
        while True:
            line = stream.readline(1000)
            if not line:
                return
            assert len(line) <= 1000
            yield line
    elif mode == "readlines":
        yield from stream.readlines()
    elif mode == "iterate":
        yield from stream
    else:
        raise ValueError(mode)


def count(environ, start_response):
    mode = parse_qs(environ.get("QUERY_STRING", "")).get("mode", ["pieces"])[0]
    h = hashlib.sha256()
    n = 0
    try:
        for piece in _read_all(environ["wsgi.input"], mode):
            h.update(piece)
            n += len(piece)
        # Reading past the end gives b"" without blocking.
        assert environ["wsgi.input"].read(10) == b""
    except OSError as e:
        start_response("400 Bad Request", [("Content-Type", "text/plain")])
        return [("body error: %s" % e).encode()]
    body = json.dumps({
        "bytes": n,
        "sha256": h.hexdigest(),
        "content_length": environ.get("CONTENT_LENGTH"),
        "input_terminated": environ.get("wsgi.input_terminated"),
    }).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


class UnreadableBody(Exception):
    """What a framework raises from the OSError of a body it cannot read
    (Django's UnreadablePostError)."""


def strict(environ, start_response):
    """Reads the whole body and lets whatever the read raises escape, as
    most apps do. ?wrap=1 raises its own exception from that OSError (as
    Django does); ?fail=1 raises an OSError of its own after reading the
    whole body: a real application error."""
    query = parse_qs(environ.get("QUERY_STRING", ""))
    try:
        body = environ["wsgi.input"].read()
    except OSError as e:
        if "wrap" in query:
            raise UnreadableBody(str(e)) from e
        raise
    if "fail" in query:
        raise OSError("the application's own error")
    answer = str(len(body)).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(answer)))])
    return [answer]


def ignore(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "7")])
    return [b"ignored"]


def router(environ, start_response):
    if environ["PATH_INFO"] == "/ignore":
        return ignore(environ, start_response)
    return count(environ, start_response)
