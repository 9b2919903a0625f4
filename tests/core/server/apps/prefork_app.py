"""WSGI app of the prefork tests: tells which process served a request, and
shows that Python works in a forked worker process (imports, threads)."""
import ctypes
import json
import os
import threading

# The app is imported once, by the supervisor, before it forks.
IMPORTED_IN = os.getpid()


def _work():
    # A module first imported after the fork, and a new thread.
    import hashlib
    result = []
    worker = threading.Thread(target=lambda: result.append(hashlib.sha256(b"m0").hexdigest()[:16]))
    worker.start()
    worker.join(5)
    return result[0] if result else None


def _hold_the_gil(environ):
    # Stuck in C code that keeps the GIL (a ctypes.PyDLL call does not
    # release it), far longer than any drain timeout.
    environ["wsgi.errors"].write(f"holding the GIL in pid {os.getpid()}\n")
    environ["wsgi.errors"].flush()
    ctypes.PyDLL(None).sleep(3600)


def app(environ, start_response):
    if environ["PATH_INFO"] == "/hold-the-gil":
        _hold_the_gil(environ)
    info = {"pid": os.getpid(), "imported_in": IMPORTED_IN,
            "multiprocess": environ["wsgi.multiprocess"]}
    if environ["PATH_INFO"] == "/work":
        info["digest"] = _work()
    body = json.dumps(info).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
