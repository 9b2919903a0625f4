"""WSGI app of the mounts tests: answers with where it was mounted
(SCRIPT_NAME), the path below it (PATH_INFO) and how many body bytes it read."""
import json


def app(environ, start_response):
    received = 0
    while True:
        chunk = environ["wsgi.input"].read(65536)
        if not chunk:
            break
        received += len(chunk)
    body = json.dumps({"script_name": environ["SCRIPT_NAME"], "path_info": environ["PATH_INFO"],
                       "query": environ["QUERY_STRING"], "received": received}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
