"""metrics.listen: /metrics in the Prometheus text format (read back with
prometheus_client's parser) and /status.json, with counters that move with
real requests; per mount and frontend; summed over the processes of
server.workers by the supervisor."""
import json
import os
import socket
import sys

import pytest

import m0test
from metrics_support import metrics_port, samples, scrape, value

MOUNTS = """
mounts:
  - prefix: /api
    frontend: {type: http, routes: [{path: /api/ok, body: "fine"}]}
  - prefix: /
    frontend: {type: http, routes: [{path: /hello, body: "Hello, World!"}]}
metrics:
  listen: 127.0.0.1:0
"""


PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
needs_wsgi = pytest.mark.skipif(not os.path.exists(os.path.join(PLUGINS, "m0-frontend-wsgi.so")),
                                reason="the frontend-wsgi plugin is not built")


def test_counters_move_with_requests_by_mount_and_status_class(m0_server):
    server = m0_server(MOUNTS, threads=2)
    port = metrics_port(server)
    before = samples(port)
    api = {"frontend": "http", "mount": "/api"}
    root = {"frontend": "http", "mount": "/"}
    assert value(before, "m0_requests_total", code="2xx", **api) == 0
    assert value(before, "m0_connections_open") == 0
    for _ in range(3):
        assert m0test.request(server.port, path="/api/ok").status == 200
    assert m0test.request(server.port, path="/hello").status == 200
    assert m0test.request(server.port, path="/nothing").status == 404
    assert m0test.request(server.port, path="/api/nothing").status == 404
    # A connection held open counts while it is open (the ones closed above
    # leave the gauge once m0 has seen them close).
    with server.connect() as held:
        held.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"Hello, World!" in m0test.ResponseReader(held).read().body
        server.wait_until(lambda: value(samples(port), "m0_connections_open") == 1,
                          what="one connection open in the metrics")
    server.wait_until(lambda: value(samples(port), "m0_connections_open") == 0,
                      what="no connection open in the metrics")
    after = samples(port)
    assert value(after, "m0_requests_total", code="2xx", **api) == 3
    assert value(after, "m0_requests_total", code="4xx", **api) == 1
    assert value(after, "m0_requests_total", code="2xx", **root) == 2
    assert value(after, "m0_requests_total", code="4xx", **root) == 1
    assert value(after, "m0_requests_total", code="5xx", **root) == 0
    assert value(after, "m0_request_duration_seconds_count", **api) == 4
    assert value(after, "m0_request_duration_seconds_bucket", le="+Inf", **root) == 3
    assert value(after, "m0_connections_accepted_total") == 7
    assert value(after, "m0_received_bytes_total") > value(before, "m0_received_bytes_total")
    assert value(after, "m0_sent_bytes_total") >= 3 * len("fine") + 2 * len("Hello, World!")
    assert value(after, "m0_requests_in_flight") == 0
    assert value(after, "m0_executor_jobs") == 0
    assert value(after, "m0_worker_processes") == 1
    assert value(after, "m0_reactor_threads") == 2


def test_status_json_carries_the_same_numbers(m0_server):
    server = m0_server(MOUNTS)
    port = metrics_port(server)
    for _ in range(2):
        assert m0test.request(server.port, path="/hello").status == 200
    content_type, text = scrape(port, "/status.json")
    assert content_type == "application/json"
    status = json.loads(text)
    found = samples(port)
    root = next(m for m in status["mounts"] if m["mount"] == "/")
    assert root["frontend"] == "http"
    assert root["requests"]["2xx"] == value(found, "m0_requests_total", code="2xx", frontend="http", mount="/") == 2
    assert root["duration_seconds"]["count"] == 2
    assert status["connections_accepted"] == value(found, "m0_connections_accepted_total")
    assert status["worker_processes"] == 1


def test_unknown_paths_on_the_metrics_listener_get_404(m0_server):
    server = m0_server(MOUNTS)
    port = metrics_port(server)
    with socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(5)) as sock:
        sock.sendall(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
        assert m0test.recv_until_closed(sock).startswith(b"HTTP/1.1 404 ")


def test_off_by_default(m0_server):
    server = m0_server("frontend: {type: http, routes: [{path: /hello, body: hi}]}\n")
    assert m0test.request(server.port, path="/hello").status == 200
    assert "metrics:" not in server.output()


def test_supervisor_sums_every_worker_process(m0_server):
    server = m0_server(MOUNTS, "--workers", "2", threads=1)
    port = metrics_port(server)

    def per_process():
        return [p["requests"] for p in json.loads(scrape(port, "/status.json")[1])["processes"]]
    assert len(per_process()) == 2
    # The kernel spreads connections over the processes: go on until each
    # has answered some, then every one of them must be in the sums.
    sent = 0
    while sent < 1000 and not all(per_process()):
        assert m0test.request(server.port, path="/hello").status == 200
        sent += 1
    assert all(per_process()), "one process never got a connection"
    found = samples(port)
    assert value(found, "m0_worker_processes") == 2
    assert value(found, "m0_requests_total", code="2xx", frontend="http", mount="/") == sent
    assert value(found, "m0_connections_accepted_total") == sent
    assert sum(per_process()) == sent


def test_a_busy_metrics_address_stops_m0(tmp_path):
    config = tmp_path / "m0.yaml"
    config.write_text(MOUNTS)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        result = m0test.run_m0("--config", str(config), "--listen", "127.0.0.1:0",
                               "--set", f"metrics.listen=127.0.0.1:{busy}")
        assert result.returncode == 1
        assert f"127.0.0.1:{busy}" in result.stderr, result.stderr


@needs_wsgi
def test_executor_jobs_count_a_job_still_running(m0_server):
    config = f"""
frontend: {{type: wsgi, app: "log_apps:blocking_app", chdir: {APPS}}}
executor: {{type: pool, pool: {{threads: 2}}}}
metrics: {{listen: "127.0.0.1:0"}}
"""
    server = m0_server(config, env={"VIRTUAL_ENV": sys.prefix})
    port = metrics_port(server)
    assert value(samples(port), "m0_executor_jobs") == 0
    with server.open_request("/wait") as waiting:
        server.wait_until(lambda: value(samples(port), "m0_executor_jobs") == 1, what="one job in the metrics")
        found = samples(port)
        assert value(found, "m0_requests_in_flight") == 1
        assert m0test.request(server.port, path="/release").status == 200
        assert m0test.ResponseReader(waiting).read().status == 200
    server.wait_until(lambda: value(samples(port), "m0_executor_jobs") == 0, what="no job in the metrics")
    assert value(samples(port), "m0_requests_total", code="2xx", frontend="wsgi", mount="/") == 2
