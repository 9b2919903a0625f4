"""Answers with the serving process's pid: which worker process answered."""
import os


def app(environ, start_response):
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
