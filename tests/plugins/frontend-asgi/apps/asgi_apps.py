"""ASGI applications written from the ASGI 3.0 spec for m0's end-to-end tests."""
import asyncio
import json


async def _body(receive):
    chunks = []
    while True:
        message = await receive()
        assert message["type"] == "http.request", message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def scope_echo(scope, receive, send):
    """Answers with the http scope as JSON (bytes as latin-1 strings)."""
    if scope["type"] == "lifespan":
        raise RuntimeError("no lifespan here")
    body = await _body(receive)

    def plain(v):
        if isinstance(v, bytes):
            return {"bytes": v.decode("latin-1")}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    out = {k: plain(v) for k, v in scope.items()}
    out["types"] = {k: type(v).__name__ for k, v in scope.items()}
    out["body_len"] = len(body)
    payload = json.dumps(out).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


async def echo(scope, receive, send):
    """Echoes the request body; then checks receive() says http.disconnect."""
    body = await _body(receive)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/octet-stream"), (b"x-echo", b"1")]})
    await send({"type": "http.response.body", "body": body})
    message = await receive()
    assert message["type"] == "http.disconnect", message


async def stream(scope, receive, send):
    """?n=<chunks>&size=<bytes each>: a streamed response (chunked on the wire)."""
    await _body(receive)
    query = dict(p.split("=") for p in scope["query_string"].decode().split("&") if "=" in p)
    n = int(query.get("n", "5"))
    size = int(query.get("size", "10"))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    for i in range(n):
        await send({"type": "http.response.body", "body": (b"%d" % (i % 10)) * size, "more_body": True})
        await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def raise_before_start(scope, receive, send):
    raise ValueError("boom before start")


async def raise_after_start(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    raise ValueError("boom after start")


async def no_response(scope, receive, send):
    await _body(receive)


async def wrong_message(scope, receive, send):
    await send({"type": "http.response.body", "body": b"too early"})


class Lifespan:
    """lifespan support; a class instance whose __call__ is a coroutine function."""

    def __init__(self, fail=False):
        self.fail = fail

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    if self.fail:
                        await send({"type": "lifespan.startup.failed", "message": "no database"})
                        return
                    scope["state"]["resource"] = "opened"
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    print("lifespan shutdown ran", flush=True)
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await _body(receive)
        body = json.dumps({"state": scope.get("state")}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


lifespan_app = Lifespan()
lifespan_failing = Lifespan(fail=True)


async def lifespan_scope(scope, receive, send):
    """Answers every request with the `asgi` dict of its lifespan scope."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                scope["state"]["lifespan_asgi"] = scope["asgi"]
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await _body(receive)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": json.dumps(scope["state"]["lifespan_asgi"]).encode()})


def wsgi_app(environ, start_response):
    """A WSGI callable, for --interface auto."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"wsgi here"]


async def pathsend(scope, receive, send):
    """http.response.pathsend of this very file (or of ?missing)."""
    import os
    await _body(receive)
    assert "http.response.pathsend" in scope["extensions"]
    path = os.path.abspath(__file__)
    if scope["query_string"] == b"missing":
        path += ".missing"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/x-python")]})
    await send({"type": "http.response.pathsend", "path": path})


async def misbehave(scope, receive, send):
    """One way of breaking the ASGI message protocol per path."""
    if scope["type"] != "http":
        raise RuntimeError("http only")
    await _body(receive)
    start = {"type": "http.response.start", "status": 200, "headers": []}
    path = scope["path"]
    if path == "/unknown-type":
        await send({"type": "http.response.bogus"})
    elif path == "/start-twice":
        await send(start)
        await send(start)
    elif path == "/body-after-end":
        await send(start)
        await send({"type": "http.response.body", "body": b"complete"})
        await send({"type": "http.response.body", "body": b"more"})
    elif path == "/status-not-int":
        await send({"type": "http.response.start", "status": "200", "headers": []})
    elif path == "/header-with-newline":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1\r\nx-b: 2")]})
    elif path == "/return-mid-stream":
        await send(start)
        await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    elif path == "/body-not-bytes":
        await send(start)
        await send({"type": "http.response.body", "body": "text", "more_body": True})
