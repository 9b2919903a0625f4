"""ASGI apps for the request-deadline tests: a FastAPI route awaiting a slow
call, a sync FastAPI route the framework runs in a thread, and plain ASGI
coroutines that never await or swallow their cancellation."""
import asyncio
import time

from fastapi import FastAPI

api = FastAPI()
seen = {"cancelled": 0}


@api.get("/slow")
async def slow():
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        seen["cancelled"] += 1
        raise
    return {"slept": True}


@api.get("/sync-slow")
def sync_slow():
    time.sleep(8)
    return {"slept": True}


@api.get("/cancelled")
async def cancelled():
    return seen


@api.get("/fast")
async def fast():
    return {"ok": True}


async def _text(send, body, status=200):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


async def raw(scope, receive, send):
    """Plain ASGI: /block never awaits, /swallow ignores its cancellation,
    /extend asks for more time through the m0.request_timeout extension."""
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/block":
        time.sleep(600)
    elif path == "/swallow":
        while True:
            try:
                await asyncio.sleep(600)
            except asyncio.CancelledError:
                pass
    elif path == "/extend":
        assert "m0.request_timeout" in scope["extensions"]
        await send({"type": "m0.request_timeout", "seconds": 30})
        await asyncio.sleep(2)
        await _text(send, b"extended")
    else:
        await _text(send, b"fast")
