"""ASGI applications for the websocket scope tests, written from the ASGI
WebSocket spec (version 2.4) and its websocket.http.response extension.

Each prints what it saw to stdout (m0's log), flushed, so a test can wait for
the line instead of guessing when the app got there.
"""
import asyncio
import base64
import json


def _jsonable(value):
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _query(scope):
    pairs = (p.split("=", 1) for p in scope["query_string"].decode().split("&") if "=" in p)
    return dict(pairs)


async def lifespan_state(scope, receive, send):
    """The lifespan half of every app here: puts a value in the state."""
    message = await receive()
    assert message["type"] == "lifespan.startup"
    scope["state"]["from_lifespan"] = "yes"
    await send({"type": "lifespan.startup.complete"})
    message = await receive()
    await send({"type": "lifespan.shutdown.complete"})


def websocket_app(handler):
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            return await lifespan_state(scope, receive, send)
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"plain http"})
            return
        await handler(scope, receive, send)
    app.__doc__ = handler.__doc__
    return app


@websocket_app
async def echo(scope, receive, send):
    """Accepts (with the first subprotocol offered and a header of its own),
    sends the scope as its first message, then echoes text and bytes. A text
    message "close <code> <reason>" makes it close with that code; what the
    disconnect said is printed."""
    connect = await receive()
    assert connect["type"] == "websocket.connect", connect
    offered = scope["subprotocols"]
    await send({"type": "websocket.accept", "subprotocol": offered[0] if offered else None,
                "headers": [(b"x-app", b"accepted")]})
    await send({"type": "websocket.send", "text": json.dumps(_jsonable(scope))})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            print(f"echo: disconnect code={message['code']} reason={message.get('reason', '')!r}", flush=True)
            return
        assert message["type"] == "websocket.receive", message
        text = message.get("text")
        if text is not None and text.startswith("close "):
            _, code, reason = text.split(" ", 2)
            await send({"type": "websocket.close", "code": int(code), "reason": reason})
            after = await receive()
            print(f"echo: after close {after['type']} code={after.get('code')}", flush=True)
            return
        if text is not None:
            await send({"type": "websocket.send", "text": text})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


@websocket_app
async def plain_echo(scope, receive, send):
    """The Autobahn echo: accepts, echoes every message as it came."""
    await receive()
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        await send({"type": "websocket.send", "bytes": message.get("bytes"), "text": message.get("text")})


@websocket_app
async def gatekeeper(scope, receive, send):
    """?deny=close closes before accepting (403); ?deny=response answers
    with its own HTTP response (websocket.http.response); ?deny=raise raises
    before accepting (500); ?deny=return returns without a word (500)."""
    await receive()
    how = _query(scope).get("deny")
    if how == "close":
        await send({"type": "websocket.close", "code": 1000})
    elif how == "response":
        await send({"type": "websocket.http.response.start", "status": 401,
                    "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Token")]})
        await send({"type": "websocket.http.response.body", "body": b"no ", "more_body": True})
        await send({"type": "websocket.http.response.body", "body": b"entry"})
    elif how == "raise":
        raise ValueError("gatekeeper refuses by raising")
    elif how == "return":
        return
    else:
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": "welcome"})
        await receive()
    message = await receive()
    print(f"gatekeeper: after the answer {message['type']}", flush=True)


@websocket_app
async def crash_after_accept(scope, receive, send):
    """Accepts, then raises on the first message it gets: m0 closes 1011."""
    await receive()
    await send({"type": "websocket.accept"})
    await receive()
    raise RuntimeError("crash_after_accept: the app broke")


@websocket_app
async def send_after_disconnect(scope, receive, send):
    """Waits for the disconnect, then sends: send() must raise an OSError."""
    await receive()
    await send({"type": "websocket.accept"})
    message = await receive()
    print(f"late: {message['type']} code={message.get('code')}", flush=True)
    try:
        await send({"type": "websocket.send", "text": "too late"})
    except OSError as e:
        print(f"late: send raised {type(e).__name__}", flush=True)
        return
    print("late: send did not raise", flush=True)


@websocket_app
async def drained(scope, receive, send):
    """Accepts and waits; prints the disconnect the drain causes."""
    await receive()
    await send({"type": "websocket.accept"})
    print("drained: accepted", flush=True)
    message = await receive()
    print(f"drained: {message['type']} code={message.get('code')}", flush=True)


# A slow consumer: reads nothing until told to, then everything.
_go = {}


@websocket_app
async def slow_reader(scope, receive, send):
    """Accepts, then does not call receive() until the client sends on a
    second connection with ?release=1; then counts what arrives."""
    await receive()
    if _query(scope).get("release"):
        await send({"type": "websocket.accept"})
        _go["event"].set()
        await send({"type": "websocket.close", "code": 1000})
        return
    _go["event"] = asyncio.Event()
    await send({"type": "websocket.accept"})
    print("slow_reader: not reading", flush=True)
    await _go["event"].wait()
    total = 0
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            break
        total += len(message["bytes"])
        if total >= int(_query(scope)["expect"]):
            await send({"type": "websocket.send", "text": f"got {total}"})
    print(f"slow_reader: got {total} bytes", flush=True)


@websocket_app
async def firehose(scope, receive, send):
    """Sends ?n messages of ?size bytes as fast as send() lets it; prints the
    first message whose send() had to wait for room, and how far it got
    when the client left."""
    await receive()
    await send({"type": "websocket.accept"})
    q = _query(scope)
    n, size = int(q["n"]), int(q["size"])
    block = b"x" * size
    waited = False
    try:
        for i in range(n):
            sending = asyncio.ensure_future(send({"type": "websocket.send", "bytes": block}))
            # A send() with room finishes in the step it starts in.
            await asyncio.sleep(0)
            if not sending.done() and not waited:
                waited = True
                print(f"firehose: send {i} waits for room", flush=True)
            await sending
    except OSError:
        print(f"firehose: stopped by the client after {i} messages", flush=True)
        return
    print(f"firehose: sent {n}", flush=True)
    await receive()


async def _hold(scope, receive, send):
    """Accepts and waits for the disconnect (for many clients vanishing)."""
    await receive()
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": "ready"})
    message = await receive()
    assert message["type"] == "websocket.disconnect"


async def tasks(scope, receive, send):
    """/tasks on http: the loop's Tasks but this one; a WebSocket holds
    until its client leaves. No lifespan (whose Task would count)."""
    if scope["type"] == "lifespan":
        raise RuntimeError("no lifespan")
    if scope["type"] == "http":
        count = len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(count).encode()})
        return
    await _hold(scope, receive, send)
