"""Apps that answer with who they think the client is, as JSON: what a WSGI
environ and an ASGI scope say about the client, the scheme and the server."""
import json

WSGI_KEYS = ("REMOTE_ADDR", "REMOTE_PORT", "wsgi.url_scheme", "HTTPS", "SERVER_NAME", "SERVER_PORT")


def wsgi_app(environ, start_response):
    body = json.dumps({k: environ.get(k) for k in WSGI_KEYS}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


async def asgi_app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    client = scope.get("client")
    body = json.dumps({"client": list(client) if client else None, "scheme": scope["scheme"],
                       "server": list(scope["server"]) if scope.get("server") else None}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
