"""Flask views for the pool's growth tests (test_pool_growth.py).

/together/<n>: counts itself in, then waits with the GIL released (sleeping
in short steps, as a view waits on a socket) until n requests are inside at
once; answers "together", or "alone" when they never were (after `wait`
seconds, 30 by default). Concurrency shown by events, not by timing.

/cpu: computes in pure Python, holding the GIL (about 2 ms on an idle core).

/stream: a streamed response that sends its first piece, then waits (GIL
released) for /release before its last: "released", or "alone" after 30 s."""
import threading
import time

from flask import Flask, request

app = Flask(__name__)

_lock = threading.Lock()
_arrived = 0


@app.route("/together/<int:n>")
def together(n):
    global _arrived
    with _lock:
        _arrived += 1
    deadline = time.monotonic() + float(request.args.get("wait", "30"))
    while _arrived < n and time.monotonic() < deadline:
        time.sleep(0.005)
    return "together" if _arrived >= n else "alone"


@app.route("/cpu")
def cpu():
    total = 0
    for i in range(40000):
        total += i * i % 7
    return str(total)


_released = threading.Event()


@app.route("/stream")
def stream():
    def pieces():
        yield "first\n"
        yield "released" if _released.wait(30) else "alone"
    return app.response_class(pieces(), mimetype="text/plain")


@app.route("/release")
def release():
    _released.set()
    return "ok"

