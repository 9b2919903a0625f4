"""A WSGI app run on the asyncio executor's loop thread (an experiment)."""
import threading


def app(environ, start_response):
    body = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "text/plain"), ("X-Thread", threading.current_thread().name)])
    if environ["PATH_INFO"] == "/stream":
        return (b"chunk%d " % i for i in range(100))
    return [b"wsgi:" + body]
