"""Plain WSGI views of the hold-path tests: a view holds its connection with
environ["m0.hold"] and returns; another publishes with m0.publish()."""
import json
import socket
import threading
from urllib.parse import parse_qs

import m0


_release = threading.Event()


def query(environ):
    return {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    if path == "/hold":
        timeout = float(q["timeout"]) if "timeout" in q else None
        channels = q.get("channels", "news").split(",")
        environ["m0.hold"](channels, q.get("mode", "sse"), timeout=timeout)
        # What the tests wait for before they publish: the hold is subscribed.
        print(f"held {q.get('tag', '')}", flush=True)
        # The body is dropped; the cookie stays.
        start_response("200 OK", [("Content-Type", "text/plain"), ("Set-Cookie", "seen=1")])
        return [b"not sent"]
    if path == "/hold-after-refused-headers":
        # start_response refuses the list (a bad name after a good one); the
        # view goes on and holds without another start_response.
        try:
            start_response("200 OK", [("X-Partial", "accepted-before-the-error"), ("Bad Name", "v")])
        except ValueError:
            pass
        environ["m0.hold"](["news"], "sse")
        print(f"held {q.get('tag', '')}", flush=True)
        return []
    if path == "/hold-then-redis-publish":
        # Holds, then publishes on its own channel straight to Redis over a
        # plain socket (RESP), as another process would the moment the view
        # returned; the answer is how many subscribers Redis reached.
        channel = q["channel"]
        key, data = f"m0:{channel}".encode(), q.get("data", "right after").encode()
        command = b"*3\r\n$7\r\nPUBLISH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(data), data)
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(q["redis"])  # connected first: the publish leaves the moment hold() returns
            environ["m0.hold"]([channel], "sse")
            s.sendall(command)
            reply = b""
            while not reply.endswith(b"\r\n"):
                reply += s.recv(64)
        print(f"redis-published {channel} to {reply[1:-2].decode()}", flush=True)
        start_response("200 OK", [])
        return []
    if path == "/publish":
        body = environ["wsgi.input"].read()
        # bytes by default; text=1 publishes a str (a WebSocket text frame).
        m0.publish(q.get("channel", "news"), body.decode() if "text" in q else body, event=q.get("event"))
        start_response("204 No Content", [])
        return []
    if path == "/publish-many":
        # A burst bigger than any socket buffer, for the outbox limits.
        size, count = int(q["size"]), int(q["count"])
        for i in range(count):
            m0.publish(q.get("channel", "news"), f"{i:08d}".encode() + b"x" * size)
        start_response("204 No Content", [])
        return []
    if path == "/publish-from-thread":
        # Any thread: one the view starts and does not wait for.
        threading.Thread(target=m0.publish, args=(q.get("channel", "news"), q.get("data", "threaded"))).start()
        start_response("204 No Content", [])
        return []
    if path == "/slow":
        # Occupies a pool thread until /release (the registration race).
        print("slow started", flush=True)
        released = _release.wait(timeout=float(q.get("seconds", "60")))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"slow done" if released else b"slow timed out"]
    if path == "/release":
        _release.set()
        start_response("204 No Content", [])
        return []
    if path == "/bad-hold":
        try:
            channels = [] if "empty" in q else q.get("channels", "news")
            environ["m0.hold"](channels, q.get("mode", "sse"), timeout=q.get("timeout"))
        except (ValueError, TypeError) as e:
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [f"{type(e).__name__}: {e}".encode()]
        start_response("200 OK", [])
        return [b"held?"]
    if path == "/hold-then-raise":
        environ["m0.hold"]("news")
        raise RuntimeError("the view failed after holding")
    if path == "/publish-errors":
        out = {}
        for name, call in (("channel", lambda: m0.publish(1, "x")),
                           ("data", lambda: m0.publish("news", 1)),
                           ("event", lambda: m0.publish("news", "x", event="a\nb"))):
            try:
                call()
                out[name] = "accepted"
            except (TypeError, ValueError) as e:
                out[name] = type(e).__name__
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(out).encode()]
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not found"]
