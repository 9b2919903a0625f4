"""ASGI apps for test_asgi_per_request.py: what each request must get afresh,
and send() awaited through asyncio's helpers rather than a bare await."""
import asyncio
import json


async def scope_vandal(scope, receive, send):
    """Answers with what it found in its scope, then defaces every mutable
    part of it: none of that may reach the next request."""
    if scope["type"] == "lifespan":
        raise RuntimeError("no lifespan here")
    seen = {
        "asgi": dict(scope["asgi"]),
        "extensions": {k: dict(v) for k, v in scope["extensions"].items()},
        "state": dict(scope["state"]),
        "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
        "client": list(scope["client"]),
        "server": list(scope["server"]),
        "method": scope["method"],
        "path": scope["path"],
    }
    scope["asgi"]["version"] = "defaced"
    scope["asgi"]["extra"] = True
    scope["extensions"]["http.response.pathsend"]["defaced"] = True
    scope["extensions"]["defaced"] = {}
    scope["state"]["defaced"] = True
    scope["headers"].append((b"x-defaced", b"1"))
    scope["type"] = "defaced"
    payload = json.dumps(seen).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


async def send_through_helpers(scope, receive, send):
    """Awaits send() through asyncio.wait_for, ensure_future and shield: an
    awaitable that is not a coroutine must work with all three."""
    if scope["type"] == "lifespan":
        raise RuntimeError("no lifespan here")
    await asyncio.wait_for(send({"type": "http.response.start", "status": 200,
                                 "headers": [(b"content-type", b"text/plain")]}), 5)
    await asyncio.ensure_future(send({"type": "http.response.body", "body": b"one ", "more_body": True}))
    await asyncio.shield(send({"type": "http.response.body", "body": b"two ", "more_body": True}))
    result = await send({"type": "http.response.body", "body": b"three"})
    assert result is None, result
