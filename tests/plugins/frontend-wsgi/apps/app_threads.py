"""Apps with Python threads of their own, which need the GIL while m0's
executor threads serve requests and while they wait for the next one."""
import os
import threading
import time

ticks = 0


def _tick():
    global ticks
    while True:
        ticks += 1
        time.sleep(0.0005)


threading.Thread(target=_tick, name="ticker", daemon=True).start()


def _work_then_write(path):
    # Needs the GIL for a while after the response has gone: pure bytecode.
    total = 0
    for i in range(200_000):
        total += i
    with open(path + ".tmp", "w") as f:
        f.write(str(total))
    os.rename(path + ".tmp", path)


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/start":
        # /start?<name>: a thread that works on after the response and
        # then writes <name> into M0_TEST_OUT.
        name = os.path.basename(environ["QUERY_STRING"])
        target = os.path.join(os.environ["M0_TEST_OUT"], name)
        threading.Thread(target=_work_then_write, args=(target,), daemon=True).start()
        body = b"started"
    elif path == "/ticks":
        body = str(ticks).encode()

    else:
        body = b"Hello, World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
