"""A WSGI app served on the out-of-tree `condvar` executor: each view says
which executor thread ran it, and the slow ones wait on events, so the test
proves by events (not by timing) that requests ran side by side."""
import os
import sys
import threading
import time
from urllib.parse import parse_qs

arrived = threading.Condition()
arrivals = 0


def thread_name():
    # The executor names its threads (pthread_setname_np); Python's own
    # name for a thread it did not start is "Dummy-N".
    with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
        return f.read().strip()


def say(text):
    print(text, file=sys.stderr, flush=True)


def meet():
    """Returns once two requests are inside this view at the same time: on
    an executor that ran them one after the other, the first would wait for
    the second forever (here: 30 s, then it says so)."""
    global arrivals
    with arrived:
        arrivals += 1
        arrived.notify_all()
        met = arrived.wait_for(lambda: arrivals >= 2, timeout=30)
    return f"{'met' if met else 'alone'} on {thread_name()}"


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/meet":
        body = meet()
    elif path == "/slow":
        # In flight when the drain starts: it returns once the test, having
        # seen the drain begin, creates the file named by ?release=.
        release = parse_qs(environ["QUERY_STRING"])["release"][0]
        say(f"slow view started on {thread_name()}")
        deadline = time.monotonic() + 30
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.01)
        body = "slow done"
    elif path == "/stuck":
        say(f"stuck view entered on {thread_name()}")
        while True:  # application code that never returns (the GIL released)
            time.sleep(1)
    else:
        body = thread_name()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body.encode()]
