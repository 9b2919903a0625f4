"""A WSGI app whose worker processes die as soon as they are forked (a
crash loop): its os.register_at_fork callback ends the child."""
import os

os.register_at_fork(after_in_child=lambda: os._exit(3))


def app(environ, start_response):
    start_response("200 OK", [("Content-Length", "0")])
    return [b""]
