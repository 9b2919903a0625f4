"""Executor metrics (executor::stats, sampled in each serving process): pool
threads busy and parked, queue depth and queue wait while a slow WSGI view
holds every pool thread; the asyncio lane's loop lag while a coroutine
blocks its loop; read through prometheus_client's parser and /status.json."""
import os
import sys

import m0test
from metrics_support import metrics_port, samples, status, value

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
PYTHON = {"VIRTUAL_ENV": sys.prefix}

# Two pool threads for the app; the release comes through a mount of its own.
POOL = f"""
executors:
  app: {{type: pool, pool: {{threads: 2, max_threads: 2}}}}
  ctl: {{type: pool, pool: {{threads: 1}}}}
mounts:
  - prefix: /ctl
    frontend: {{type: wsgi, app: "executor_apps:control", chdir: {APPS}}}
    executor: ctl
  - prefix: /
    frontend: {{type: wsgi, app: "executor_apps:blocking", chdir: {APPS}}}
    executor: app
metrics: {{listen: "127.0.0.1:0"}}
"""

APP = {"executor": "app", "type": "pool"}


def executor(port, name):
    return next(x for x in status(port)["executors"] if x["name"] == name)


def threads(found, state):
    return value(found, "m0_executor_threads", state=state, **APP)


def test_pool_threads_queue_and_wait_follow_a_slow_view(m0_server):
    server = m0_server(POOL, env=PYTHON)
    port = metrics_port(server)
    # Idle: both threads park once their spin ends.
    server.wait_until(lambda: threads(samples(port), "parked") == 2, what="two parked pool threads")
    found = samples(port)
    assert threads(found, "busy") == 0
    assert value(found, "m0_executor_queue_depth", **APP) == 0
    assert value(found, "m0_executor_jobs_done_total", **APP) == 0

    held = [server.open_request("/slow") for _ in range(3)]
    try:
        # Two views hold both threads; the third job waits on the ring.
        server.wait_until(lambda: threads(samples(port), "busy") == 2 and
                          value(samples(port), "m0_executor_queue_depth", **APP) == 1,
                          what="two busy threads and one job queued")
        found = samples(port)
        assert threads(found, "parked") == 0
        x = executor(port, "app")
        assert (x["type"], x["threads"], x["busy"], x["queue_depth"]) == ("pool", 2, 2, 1)
        assert m0test.request(server.port, path="/ctl/release").status == 200
        for sock in held:
            assert m0test.ResponseReader(sock).read().body == b"released"
    finally:
        for sock in held:
            sock.close()

    server.wait_until(lambda: value(samples(port), "m0_executor_jobs_done_total", **APP) == 3,
                      what="three jobs done in the metrics")
    found = samples(port)
    assert value(found, "m0_executor_queue_depth", **APP) == 0
    assert threads(found, "busy") == 0
    # Every job's wait is in the histogram; the third one waited for a thread.
    assert value(found, "m0_executor_queue_wait_seconds_count", **APP) == 3
    assert value(found, "m0_executor_queue_wait_seconds_bucket", le="+Inf", **APP) == 3
    assert value(found, "m0_executor_queue_wait_seconds_sum", **APP) > 0
    # Each executor is labelled by its name: the control mount's ran one job.
    assert value(found, "m0_executor_jobs_done_total", executor="ctl", type="pool") == 1
    x = executor(port, "app")
    assert x["jobs_done"] == 3 and x["queue_wait_seconds"]["count"] == 3 and x["loop_lag_seconds"] is None


ASYNC = f"""
frontend: {{type: asgi, app: "executor_apps:loop_blocker", chdir: {APPS}}}
executor: {{type: asyncio}}
metrics: {{listen: "127.0.0.1:0"}}
"""


def test_asyncio_loop_lag_shows_a_blocked_loop(m0_server):
    server = m0_server(ASYNC, env=PYTHON)
    port = metrics_port(server)
    lane = {"executor": "default", "type": "asyncio"}
    assert value(samples(port), "m0_executor_queue_depth", **lane) == 0
    seconds = m0test.scaled(3)
    with server.open_request(f"/block?seconds={seconds}") as blocking:
        # The loop started the blocking coroutine: nothing queued, one job out.
        server.wait_until(lambda: (lambda s: s["executor_jobs"] == 1 and s["executors"][0]["queue_depth"] == 0)(
            status(port)), what="the blocking job started")
        with server.open_request("/fast") as fast:
            # The loop gets to /fast only once /block lets go of it: its lag grows meanwhile.
            server.wait_until(lambda: value(samples(port), "m0_executor_loop_lag_seconds", **lane) >= 0.5,
                              timeout=seconds + 10, what="a loop lag of 0.5 s")
            assert m0test.ResponseReader(fast, timeout=seconds + 10).read().status == 200
        assert m0test.ResponseReader(blocking, timeout=seconds + 10).read().status == 200
    server.wait_until(lambda: value(samples(port), "m0_executor_jobs_done_total", **lane) == 2,
                      what="two asyncio jobs done")
    x = status(port)["executors"][0]
    assert (x["name"], x["type"], x["threads"], x["busy"]) == ("default", "asyncio", 1, None)
    assert x["loop_lag_seconds"] >= 0.5
    assert x["queue_wait_seconds"]["count"] == 2


PREFORK = f"""
frontend: {{type: wsgi, app: "log_apps:wsgi_app", chdir: {APPS}}}
executor: {{type: pool, pool: {{threads: 2, max_threads: 2}}}}
metrics: {{listen: "127.0.0.1:0"}}
"""


def test_the_supervisor_sums_the_executors_of_every_process(m0_server):
    server = m0_server(PREFORK, "--workers", "2", env=PYTHON)
    port = metrics_port(server)
    lane = {"executor": "default", "type": "pool"}

    def pool_threads():
        found = samples(port)
        return sum(value(found, "m0_executor_threads", state=s, **lane) for s in ("busy", "idle", "parked"))
    # Two processes of two pool threads each.
    server.wait_until(lambda: pool_threads() == 4, what="four pool threads over two processes")
    for _ in range(10):
        assert m0test.request(server.port, path="/").status == 201
    server.wait_until(lambda: value(samples(port), "m0_executor_jobs_done_total", **lane) == 10,
                      what="ten jobs done over the processes")
    assert value(samples(port), "m0_executor_queue_wait_seconds_count", **lane) == 10
