"""Apps for the executor metrics tests: a WSGI view that holds its pool
thread until another mount releases it, and an ASGI app whose /block
coroutine blocks its event loop (time.sleep) on purpose."""
import threading
import time
from urllib.parse import parse_qs

_release = threading.Event()


def blocking(environ, start_response):
    """Every request holds its thread until /ctl/release."""
    _release.wait(60)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"released"]


def control(environ, start_response):
    if environ["PATH_INFO"] == "/release":
        _release.set()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


async def loop_blocker(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/block":
        seconds = float(parse_qs(scope["query_string"].decode())["seconds"][0])
        time.sleep(seconds)  # blocks the loop: what the loop lag measures
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"done"})
