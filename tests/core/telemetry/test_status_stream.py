"""/status/stream: Server-Sent Events from the metrics listener, one
status.json snapshot a second, whose counters move with real requests; a
held stream does not delay scrapes; the drain ends it."""
import os
import signal
import sys

import m0test
from metrics_support import EventStream, metrics_port, samples, total_requests, value

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")

NATIVE = """
frontend: {type: http, routes: [{path: /hello, body: "Hello, World!"}]}
metrics: {listen: "127.0.0.1:0"}
"""


def test_snapshots_follow_requests_and_scrapes_go_on(m0_server):
    server = m0_server(NATIVE)
    port = metrics_port(server)
    stream = EventStream(port)
    try:
        assert stream.status == 200
        assert "Content-Type: text/event-stream" in stream.head
        first = stream.snapshot()
        assert total_requests(first) == 0
        for _ in range(5):
            assert m0test.request(server.port, path="/hello").status == 200
        # Another client scrapes while the stream is held open.
        found = samples(port)
        assert value(found, "m0_requests_total", code="2xx", frontend="http", mount="/") == 5
        # Snapshots keep coming, a second apart, and carry the requests.
        seen = []
        server.wait_until(lambda: seen.append(total_requests(stream.snapshot())) or seen[-1] == 5,
                          what="a snapshot with 5 requests")
        for _ in range(3):
            assert m0test.request(server.port, path="/hello").status == 200
        server.wait_until(lambda: seen.append(total_requests(stream.snapshot())) or seen[-1] == 8,
                          what="a snapshot with 8 requests")
        assert seen == sorted(seen)
    finally:
        stream.close()


SLOW = f"""
server: {{drain_timeout: 60s}}
frontend: {{type: wsgi, app: "executor_apps:blocking", chdir: {APPS}}}
executor: {{type: pool, pool: {{threads: 1}}}}
metrics: {{listen: "127.0.0.1:0"}}
"""


def test_the_drain_ends_the_stream(m0_server):
    server = m0_server(SLOW, env={"VIRTUAL_ENV": sys.prefix})
    port = metrics_port(server)
    stream = EventStream(port)
    held = server.open_request("/slow")  # keeps the drain going
    try:
        stream.snapshot()
        server.send_signal(signal.SIGTERM)
        server.wait_for_log("draining")
        # The next tick says so and closes, while m0 still drains.
        while True:
            event = stream.event()
            if event.get("event") == "end":
                break
        assert event["data"] == "draining"
        assert m0test.recv_until_closed(stream.sock) == b""
        assert server.proc.poll() is None
        # A new stream is refused while m0 drains; scrapes still work.
        refused = EventStream(port)
        assert refused.status == 503
        refused.close()
        assert value(samples(port), "m0_requests_in_flight") == 1
    finally:
        held.close()
        stream.close()
