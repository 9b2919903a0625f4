"""Python code timed in whichever interpreter imports this module: pure-Python
kernels (calls, dicts, objects, strings); when DJANGO_SETTINGS_MODULE is set,
the Django example's shop page and JSON list through Django's test client;
and when KERNELS_ASGI is set, bench/asgi_bare's FastAPI and Starlette routes
called through their ASGI interface on an asyncio loop (no server around any
of them).

Run as a script, it times and prints one JSON line. Imported with KERNELS_OUT
set (by a python, or by m0 as its app: `--app python_kernels:app`), it times
at import, appends the line to that file and ends the process: the numbers
are then those of the interpreter that imported it. bench/interpreter starts
each and compares them.
"""
import json
import os
import time


class Node:
    __slots__ = ("left", "right", "val")

    def __init__(self, left, right, val):
        self.left, self.right, self.val = left, right, val


def tree(depth):
    return Node(None, None, depth) if depth == 0 else Node(tree(depth - 1), tree(depth - 1), depth)


def walk(node):
    return node.val if node.left is None else node.val + walk(node.left) + walk(node.right)


def calls():
    """Recursive calls and slot attributes."""
    return walk(tree(14))


def dicts():
    """String keys built, hashed, looked up and stored."""
    d = {}
    for i in range(200_000):
        key = f"k{i % 5000}"
        d[key] = d.get(key, 0) + i
    return len(d)


class Point:
    def __init__(self, x):
        self.x = x

    @property
    def double(self):
        return self.x * 2

    def add(self, other):
        return Point(self.x + other.x)


def objects():
    """Instances made and dropped, methods and a property."""
    acc = Point(0)
    for i in range(150_000):
        acc = acc.add(Point(i))
        _ = acc.double
    return acc.x


def strings():
    """%-formatting, join and split, as templates do."""
    parts = [f"<li class='{'odd' if i & 1 else 'even'}'>%d</li>" % i for i in range(60_000)]
    return len("".join(parts).split("<li"))


def django_kernels():
    """The example's shop page (three queries, a template, a session and a
    CSRF form) and JSON list, 200 requests each, through the test client.
    KERNELS_DJANGO_DIR: the example's directory (put on sys.path)."""
    import sys
    sys.path.insert(0, os.environ["KERNELS_DJANGO_DIR"])
    import django
    django.setup()
    from django.test import Client
    client = Client(HTTP_HOST="localhost")  # one of the example's ALLOWED_HOSTS

    def route(path):
        def run():
            for _ in range(200):
                if client.get(path).status_code != 200:
                    raise RuntimeError(f"{path}: not 200")
        run.__name__ = "django " + path
        return run
    return [route("/shop/"), route("/shop/api/products")]


ASGI_REQUESTS = 1000  # a kernel's milliseconds are then µs per request


def asgi_kernels():
    """bench/asgi_bare's FastAPI and Starlette apps (bench/lib), GET
    /items/42?q=shoes ASGI_REQUESTS times each, awaited one after another on
    one asyncio loop after the app's lifespan startup: the route's own cost,
    the floor under what any server's event loop spends on that row."""
    import asyncio
    import benchlib
    import fastapi_items
    import starlette_items

    # The headers wrk sends in bench/asgi_bare, as a server hands them over.
    headers = [(b"host", b"127.0.0.1")] + [(k.lower().encode(), v.encode()) for k, v in benchlib.BROWSER_HEADERS]
    loop = asyncio.new_event_loop()

    def route(name, module):
        app = module.app
        state = {}
        startup = [{"type": "lifespan.startup"}]

        async def lifespan_receive():
            if startup:
                return startup.pop()
            await asyncio.Event().wait()  # the shutdown that never comes

        async def lifespan_send(message):
            if message["type"] != "lifespan.startup.complete":
                raise RuntimeError(f"{name}: lifespan answered {message}")
            started.set_result(None)

        async def start():
            loop.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": state},
                                 lifespan_receive, lifespan_send))
            await started
        started = loop.create_future()
        loop.run_until_complete(start())

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        sent = []

        async def send(message):
            sent.append(message)

        async def requests():
            for _ in range(ASGI_REQUESTS):
                await app({"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
                           "http_version": "1.1", "method": "GET", "scheme": "http", "path": "/items/42",
                           "raw_path": b"/items/42", "query_string": b"q=shoes", "root_path": "",
                           "headers": headers, "client": ("127.0.0.1", 40000),
                           "server": ("127.0.0.1", 8000), "state": state.copy()}, receive, send)
            if sent[0]["status"] != 200 or json.loads(sent[-1]["body"])["q"] != "shoes":
                raise RuntimeError(f"{name}: answered {sent[0]}, {sent[-1]}")
            sent.clear()

        def run():
            loop.run_until_complete(requests())
        run.__name__ = name
        return run
    return [route("fastapi /items/{id}?q=", fastapi_items), route("starlette /items/{id}?q=", starlette_items)]


def run(repetitions):
    """{kernel: best of `repetitions` in ms}, the kernels interleaved."""
    kernels = [calls, dicts, objects, strings]
    if os.environ.get("DJANGO_SETTINGS_MODULE"):
        kernels += django_kernels()
    if os.environ.get("KERNELS_ASGI"):
        kernels += asgi_kernels()
    best = {}
    for _ in range(repetitions):
        for kernel in kernels:
            start = time.perf_counter()
            kernel()
            ms = (time.perf_counter() - start) * 1e3
            best[kernel.__name__] = min(best.get(kernel.__name__, ms), ms)
    return best


def report():
    return json.dumps(run(int(os.environ.get("KERNELS_REPETITIONS", "10"))))


def app(environ, start_response):  # what m0 serves; never reached when timing
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"kernels\n"]


if __name__ == "__main__":
    print(report())
elif os.environ.get("KERNELS_OUT"):
    line = report()
    with open(os.environ["KERNELS_OUT"], "a") as out:
        out.write(line + "\n")
    os._exit(0)  # the numbers are written: no server needed
