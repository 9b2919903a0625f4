"""The WSGI application of the TLS tests: /upload counts and hashes a body
(upload_apps.count); /download?mib=N streams random.Random(24).randbytes(N MiB),
made and sent 1 MiB at a time (the same bytes as made at once); anything else
answers with the environ (wsgi_apps.dump_environ)."""
import random

import upload_apps
import wsgi_apps

DOWNLOAD_SEED = 24


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/upload":
        return upload_apps.count(environ, start_response)
    if path == "/download":
        mib = int(environ["QUERY_STRING"].partition("=")[2])
        generator = random.Random(DOWNLOAD_SEED)
        # No Content-Length: the response is chunked, written as it is made.
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return (generator.randbytes(1 << 20) for _ in range(mib))
    return wsgi_apps.dump_environ(environ, start_response)
