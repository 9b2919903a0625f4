"""A WSGI app that starts a thread when it is imported: a process that runs
it cannot fork serving processes safely."""
import threading
import time

threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()


def app(environ, start_response):
    start_response("200 OK", [("Content-Length", "0")])
    return [b""]
