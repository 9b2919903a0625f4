"""WSGI applications the frontend-wsgi end-to-end tests run.

`validated` is wrapped in wsgiref.validate.validator: any PEP 3333 violation by
the server (or the app) turns into an AssertionError, i.e. a 500, so every 200
these endpoints return is also a compliance check. The `bad_*` apps break the
rules on purpose and are not wrapped.
"""
import io
import json
import os
import sys
import threading
import time
from wsgiref.validate import validator

# /file serves this through wsgi.file_wrapper (the tests know it too).
PAYLOAD = bytes(range(256)) * 400
_payload_fd = None


def _payload_file():
    """A path to a real file holding PAYLOAD; unlinked at once, so nothing is
    left behind when the server is killed."""
    global _payload_fd
    if _payload_fd is None:
        import tempfile
        fd, path = tempfile.mkstemp(prefix="m0-wsgi-payload-")
        os.write(fd, PAYLOAD)
        os.unlink(path)
        _payload_fd = fd
    return "/proc/self/fd/%d" % _payload_fd


# Chunks produced by /big per tag (flow control shows in how few are made
# while the client does not read).
_produced = {}

# Counts of close() calls per tag, read back through /closed?tag=...
_closed = {}
_closed_lock = threading.Lock()


def _mark_closed(tag):
    with _closed_lock:
        _closed[tag] = _closed.get(tag, 0) + 1


class Body:
    """An iterable with close(), as frameworks return."""

    def __init__(self, tag, chunks, delay=0.0):
        self.tag, self.chunks, self.delay = tag, chunks, delay

    def __iter__(self):
        for i, c in enumerate(self.chunks):
            if i and self.delay:
                time.sleep(self.delay)
            yield c

    def close(self):
        _mark_closed(self.tag)


class _Closing:
    """Iterates a generator; close() is counted under `tag`."""

    def __init__(self, tag, gen):
        self.tag, self.gen = tag, gen

    def __iter__(self):
        return self.gen

    def close(self):
        self.gen.close()
        _mark_closed(self.tag)


def _query(environ):
    out = {}
    for part in environ.get("QUERY_STRING", "").split("&"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out


def _json(start_response, obj, status="200 OK"):
    data = json.dumps(obj).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def router(environ, start_response):
    path = environ["PATH_INFO"]
    q = _query(environ)
    if path == "/hello":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"Hello, World!"]
    if path == "/spawn":
        # A program that keeps every descriptor its parent lets it inherit
        # (close_fds=False, as os.system's shell does) and outlives the
        # request; its pid comes back to be stopped by the test.
        import subprocess
        child = subprocess.Popen(["sleep", "300"], close_fds=False)
        return _json(start_response, {"pid": child.pid})
    if path.startswith("/environ"):
        env = {k: v for k, v in environ.items() if isinstance(v, str)}
        env["wsgi.version"] = list(environ["wsgi.version"])
        for k in ("wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once"):
            env[k] = environ[k]
        env["has_file_wrapper"] = callable(environ.get("wsgi.file_wrapper"))
        environ["wsgi.errors"].write("errors-stream-line %s\n" % q.get("mark", ""))
        environ["wsgi.errors"].flush()
        return _json(start_response, env)
    if path == "/input":
        inp = environ["wsgi.input"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        mode = q.get("mode", "read")
        if mode == "read":
            parts = [inp.read(3), inp.read(length)]
            parts.append(inp.read(10))  # past the body: must be empty
            result = {"parts": [p.decode("latin-1") for p in parts]}
        elif mode == "readline":
            lines = []
            while True:
                line = inp.readline()
                if not line:
                    break
                lines.append(line.decode("latin-1"))
            result = {"lines": lines}
        elif mode == "readline-limit":
            result = {"first": inp.readline(4).decode(), "rest": inp.read(length).decode()}
        elif mode == "readlines":
            result = {"lines": [l.decode() for l in inp.readlines()]}
        elif mode == "iter":
            result = {"lines": [l.decode() for l in inp]}
        else:
            result = {"all": inp.read(length).decode("latin-1")}
        return _json(start_response, result)
    if path == "/stream":
        n = int(q.get("n", "3"))
        delay = float(q.get("delay", "0"))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Body(q.get("tag", "stream"), [b"chunk%d;" % i for i in range(n)], delay)
    if path == "/stream-gated":
        # chunk0, then nothing until the test opens the FIFO `fifo` for
        # writing and closes it, then chunk1.
        fifo = q["fifo"]

        def gated():
            yield b"chunk0;"
            with open(fifo, "rb") as gate:
                gate.read()
            yield b"chunk1;"
        start_response("200 OK", [("Content-Type", "text/plain")])
        return _Closing(q.get("tag", "gated"), gated())
    if path == "/stream-length":
        chunks = [b"abc", b"defg", b"hi"]
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "9")])
        return Body("stream-length", chunks)
    if path == "/one-chunk-iter":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        return Body("one-chunk", [b"12345"])
    if path == "/list":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"a", b"bc", b"", b"def"]
    if path == "/write":
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"written-1;")
        write(b"written-2;")
        return [b"returned"]
    if path == "/file":
        f = open(_payload_file(), "rb")
        skip = int(q.get("skip", "0"))
        if skip:
            f.read(skip)
        size = os.fstat(f.fileno()).st_size - skip
        start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(size))])
        return environ["wsgi.file_wrapper"](f, 4096)
    if path == "/file-bytesio":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return environ["wsgi.file_wrapper"](io.BytesIO(b"from-bytesio" * 3), 5)
    if path == "/exc-info-replace":
        start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            raise ValueError("replaced")
        except ValueError:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")], sys.exc_info())
        return [b"replaced by the error page"]
    if path == "/big":
        tag, n = q.get("tag", "big"), int(q.get("n", "64"))
        chunk = b"x" * (1 << 20)

        def gen():
            for _ in range(n):
                with _closed_lock:
                    _produced[tag] = _produced.get(tag, 0) + 1
                yield chunk
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return _Closing(tag, gen())
    if path == "/produced":
        with _closed_lock:
            return _json(start_response, {"count": _produced.get(q.get("tag", ""), 0)})
    if path == "/head-length":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "1234")])
        return [] if environ["REQUEST_METHOD"] == "HEAD" else [b"y" * 1234]
    if path == "/closed":
        with _closed_lock:
            return _json(start_response, {"count": _closed.get(q.get("tag", ""), 0)})
    if path == "/headers":
        # n headers named X-H0.., values long enough to live on the heap.
        tag = q.get("tag", "")
        start_response("200 OK", [("Content-Type", "text/plain")] +
                       [("X-H%d" % i, "%s-value-of-header-%d" % (tag, i)) for i in range(int(q.get("n", "0")))])
        return [tag.encode()]
    if path == "/status":
        code = q.get("code", "204")
        if code in ("204", "304"):
            start_response("%s Custom" % code, [])
            return []
        start_response("%s Custom" % code, [("Content-Type", "text/plain")])
        return [b"status"]
    return _json(start_response, {"error": "no route", "path": path}, "404 Not Found")


validated = validator(router)


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello, World!"]


def dump_environ(environ, start_response):
    """The whole environ as JSON: str values as they are, every other value
    described (wsgi.version as a list, flags as booleans, objects by type)."""
    def describe(value):
        if isinstance(value, str) or isinstance(value, bool):
            return value
        if isinstance(value, tuple):
            return list(value)
        return "<%s>" % type(value).__name__
    body = environ["wsgi.input"].read()
    out = {k: describe(v) for k, v in environ.items()}
    out["<body>"] = body.decode("latin-1")
    data = json.dumps(out).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def make_app(greeting="factory"):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [greeting.encode()]
    return validator(app)


not_callable = 42


def bad_app(environ, start_response):
    """Each path breaks PEP 3333 in one way; /ok shows the server still serves."""
    path = environ["PATH_INFO"]
    if path == "/ok":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"still serving"]
    if path == "/engine-headers":
        # Fields the engine owns (framing, connection, Date, Server): dropped.
        start_response("200 OK", [("Content-Type", "text/plain"), ("Connection", "close"),
                                  ("Keep-Alive", "timeout=1"), ("Transfer-Encoding", "chunked"),
                                  ("Date", "Thu, 01 Jan 1970 00:00:00 GMT"), ("Server", "from-the-app"),
                                  ("X-Kept", "yes")])
        return [b"engine headers"]
    if path == "/raise":
        raise RuntimeError("boom from the app")
    if path == "/str-body":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return ["not bytes"]
    if path == "/str-chunk":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Body("str-chunk", [b"fine", "not bytes"])
    if path == "/bad-status":
        start_response("OK 200", [("Content-Type", "text/plain")])
        return [b"x"]
    if path == "/status-crlf":
        start_response("200 OK\r\nX-Injected: 1", [("Content-Type", "text/plain")])
        return [b"x"]
    if path == "/header-crlf":
        start_response("200 OK", [("Content-Type", "text/plain"), ("X-Evil", "a\r\nX-Injected: yes")])
        return [b"x"]
    if path == "/header-name":
        start_response("200 OK", [("Bad Name", "v")])
        return [b"x"]
    if path == "/no-start-response":
        return [b"body without headers"]
    if path == "/no-start-response-iter":
        return Body("no-start", [b"body without headers"])
    if path == "/twice":
        start_response("200 OK", [("Content-Type", "text/plain")])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"x"]
    if path == "/exc-info-after-send":
        def gen():
            start_response("200 OK", [("Content-Type", "text/plain")])
            yield b"first part;"
            try:
                raise KeyError("late failure")
            except KeyError:
                start_response("500 Internal Server Error", [("Content-Type", "text/plain")], sys.exc_info())
            yield b"never"
        return gen()
    if path == "/raise-in-iter":
        def gen():
            start_response("200 OK", [("Content-Type", "text/plain")])
            raise ValueError("before the first chunk")
            yield b""  # noqa: unreachable, makes this a generator
        return gen()
    if path == "/close-raises":
        class B(Body):
            def close(self):
                raise RuntimeError("close failed")
        start_response("200 OK", [("Content-Type", "text/plain")])
        return B("x", [b"body"])
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"no route"]
