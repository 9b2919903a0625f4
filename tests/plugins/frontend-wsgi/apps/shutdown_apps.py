"""Applications that do not finish on their own: what a stop must cut short."""
import time


def sse_ticks(environ, start_response):
    """Server-sent events by generator: one tick, then a long wait, forever."""
    start_response("200 OK", [("Content-Type", "text/event-stream")])

    def ticks():
        while True:
            yield b"data: tick\n\n"
            time.sleep(3)
    return ticks()


def sleeps(environ, start_response):
    """A view that sleeps far longer than any drain timeout."""
    seconds = float(environ.get("QUERY_STRING") or "60")
    # The test waits for this line: the request is in the app.
    environ["wsgi.errors"].write(f"sleeping {seconds} s\n")
    environ["wsgi.errors"].flush()
    time.sleep(seconds)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"slept\n"]
