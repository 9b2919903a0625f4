"""server.max_requests (+ jitter) and server.max_rss: a serving process past
either is replaced by a new one, which serves before the old one drains;
one replacement at a time, and no request fails (under wrk)."""
import re

import m0test
from load_support import one_replacement_at_a_time, under_load

ROUTES = (
    "frontend:\n"
    "  type: http\n"
    "  routes:\n"
    "    - {path: /hello, body: 'Hello, World!'}\n"
)


def access_logged(tmp_path):
    path = tmp_path / "access.log"
    return ROUTES + f"log: {{access: true, access_file: {path}}}\n", path


def test_max_requests_replaces_processes_one_at_a_time_and_no_request_fails(m0_server, tmp_path):
    config, access = access_logged(tmp_path)
    server = m0_server(config, "--workers", "2", "--set", "server.max_requests=300",
                       "--set", "server.max_requests_jitter=100")
    under_load(server, access, lambda: server.wait_for_log(
        re.compile(r"serves; draining pid \d+, which it replaces \(it served server.max_requests requests\)"),
        count=4, timeout=120))
    log = server.output()
    assert len(one_replacement_at_a_time(log)) >= 4
    limits = re.findall(r"info: served (\d+) requests \(server.max_requests 300, this process's limit with its "
                        r"jitter (\d+)\)", log)
    assert len(limits) >= 4, log
    for served, limit in limits:
        assert 300 <= int(limit) <= 400 and int(served) >= int(limit)
    assert server.stop() == 0


def test_max_rss_replaces_a_process_over_it(m0_server):
    # Every process is over 1 MiB: each is replaced in turn, again and again.
    server = m0_server(ROUTES, "--workers", "2", "--set", "server.max_rss=1m")
    server.wait_for_log(re.compile(r"supervisor: replacing worker process \d \(pid \d+\): it uses \d+ MiB of memory, "
                                   r"over server.max_rss \(1 MiB\)"), count=3, timeout=60)
    server.wait_for_log(re.compile(r"serves; draining pid \d+, which it replaces \(it uses \d+ MiB"), count=3)
    for _ in range(20):
        assert m0test.request(server.port, path="/hello").status == 200
    assert server.stop() == 0
    assert len(one_replacement_at_a_time(server.output())) >= 3
