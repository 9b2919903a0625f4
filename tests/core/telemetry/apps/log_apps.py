"""Apps for the access log and metrics tests: a WSGI and an ASGI app that
answer 201 with a 5-byte body and an X-App header naming their interface,
and a WSGI app that holds its thread until told to let go."""
import threading


def wsgi_app(environ, start_response):
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-App", "wsgi")])
    return [b"wsgi!"]


async def asgi_app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 201,
                "headers": [(b"content-type", b"text/plain"), (b"x-app", b"asgi")]})
    await send({"type": "http.response.body", "body": b"asgi!"})


_released = threading.Event()


def blocking_app(environ, start_response):
    """/wait blocks its thread until /release is requested."""
    if environ["PATH_INFO"] == "/release":
        _released.set()
    else:
        _released.wait(60)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"done"]
