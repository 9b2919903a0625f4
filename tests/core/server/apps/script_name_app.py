"""WSGI app of the mounts tests: answers with where it was mounted
(SCRIPT_NAME) and the path below it (PATH_INFO)."""
import json


def app(environ, start_response):
    body = json.dumps({"script_name": environ["SCRIPT_NAME"], "path_info": environ["PATH_INFO"],
                       "query": environ["QUERY_STRING"]}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
