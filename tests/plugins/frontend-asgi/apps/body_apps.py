"""ASGI applications for the request body, disconnect and trailers tests,
written from the ASGI 3.0 HTTP spec and its trailers extension.

Each prints what it saw to stdout (m0's log), flushed, so a test can wait for
the line instead of guessing when the app got there.
"""
import asyncio
import hashlib
import json


def http_only(app):
    """No lifespan support: m0 (lifespan: auto) then serves without it."""
    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            raise RuntimeError("http only")
        await app(scope, receive, send)
    wrapped.__doc__ = app.__doc__
    return wrapped


def _query(scope):
    pairs = (p.split("=", 1) for p in scope["query_string"].decode().split("&") if "=" in p)
    return dict(pairs)


@http_only
async def digest(scope, receive, send):
    """Reads the body as it comes and answers with what it saw: byte count,
    SHA-256, the number of http.request messages and the largest one.
    ?delay=<seconds> sleeps after each message (a slow reader)."""
    delay = float(_query(scope).get("delay", "0"))
    h = hashlib.sha256()
    n = messages = largest = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            print(f"digest: http.disconnect after {n} bytes", flush=True)
            return
        assert message["type"] == "http.request", message
        body = message.get("body", b"")
        assert isinstance(body, bytes), type(body)
        h.update(body)
        n += len(body)
        messages += 1
        largest = max(largest, len(body))
        if not message.get("more_body", False):
            break
        if delay:
            await asyncio.sleep(delay)
    answer = json.dumps({"bytes": n, "sha256": h.hexdigest(), "messages": messages, "largest": largest}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": answer})
    after = await receive()
    print(f"digest: after the response {after['type']}", flush=True)


@http_only
async def early_answer(scope, receive, send):
    """Answers before reading the body, then calls receive()."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"answered early"})
    message = await receive()
    print(f"early_answer: then {message['type']}", flush=True)


async def _read_body(receive):
    while True:
        message = await receive()
        if not message.get("more_body", False):
            return


@http_only
async def long_poll(scope, receive, send):
    """Reads the body, then waits for the client to go away without writing
    anything (a long poll whose event never comes)."""
    await _read_body(receive)
    print("long_poll: waiting", flush=True)
    message = await receive()
    print(f"long_poll: woke with {message['type']}", flush=True)


@http_only
async def answer_after_disconnect(scope, receive, send):
    """A long poll that still answers when receive() says http.disconnect:
    a client that only half-closed reads the answer."""
    await _read_body(receive)
    print("answer_after_disconnect: waiting", flush=True)
    message = await receive()
    print(f"answer_after_disconnect: woke with {message['type']}", flush=True)
    # A receive() after the disconnect says it again at once.
    again = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": f"answered after {message['type']}, then {again['type']}".encode()})


@http_only
async def slow_stream(scope, receive, send):
    """Streams a chunk every 10 ms until send() raises."""
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    sent = 0
    try:
        while True:
            await send({"type": "http.response.body", "body": b"tick\n", "more_body": True})
            sent += 1
            if sent == 1:
                print("slow_stream: streaming", flush=True)
            await asyncio.sleep(0.01)
    except OSError as e:
        print(f"slow_stream: send raised {type(e).__name__} (OSError: {isinstance(e, OSError)})", flush=True)
        raise


@http_only
async def with_trailers(scope, receive, send):
    """A chunked response with trailer fields sent in two messages.
    ?length=1 sets a content-length (no place for trailers on the wire);
    ?unasked=1 sends trailers without announcing them (an app error)."""
    await receive()
    q = _query(scope)
    assert "http.response.trailers" in scope["extensions"]
    headers = [(b"content-type", b"text/plain"), (b"trailer", b"x-digest, x-count")]
    body = [b"first;", b"second;", b"third"]
    if q.get("length"):
        headers.append((b"content-length", b"%d" % sum(map(len, body))))
    await send({"type": "http.response.start", "status": 200, "headers": headers,
                "trailers": not q.get("unasked")})
    for i, part in enumerate(body):
        await send({"type": "http.response.body", "body": part, "more_body": i < len(body) - 1})
    digest_value = hashlib.sha256(b"".join(body)).hexdigest().encode()
    await send({"type": "http.response.trailers", "headers": [(b"x-digest", digest_value)], "more_trailers": True})
    await send({"type": "http.response.trailers", "headers": [(b"x-count", b"3")], "more_trailers": False})


@http_only
async def tasks(scope, receive, send):
    """Answers with the number of asyncio Tasks on this loop besides its own."""
    await receive()
    count = len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"%d" % count})


@http_only
async def endless(scope, receive, send):
    """/tasks: see tasks(); anything else streams 16 KiB chunks until the
    client goes away."""
    if scope["path"] == "/tasks":
        await tasks(scope, receive, send)
        return
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    chunk = b"x" * 16384
    while True:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
