"""A WSGI and an ASGI app for the access log and metrics tests: each answers
201 with a 5-byte body and an X-App header naming its interface."""


def wsgi_app(environ, start_response):
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-App", "wsgi")])
    return [b"wsgi!"]


async def asgi_app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 201,
                "headers": [(b"content-type", b"text/plain"), (b"x-app", b"asgi")]})
    await send({"type": "http.response.body", "body": b"asgi!"})
