"""The pool's default growth in served processes (executor.pool.growth:
blocked, README "Elastic"): with no executor keys a Flask app whose views
wait with the GIL released is served concurrently, a view that computes
does not grow the pool under 64 connections, Django on PostgreSQL holds one
persistent connection per thread and no more than the bound, and a user who
sized the pool keeps the eager growth of before. `m0 --check` prints the
bound and the database connections it implies."""
import asyncio
import concurrent.futures
import os
import re
import sys
import threading

import pytest

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(HERE, "apps")
sys.path.insert(0, os.path.join(m0test.SOURCE_DIR, "tests", "core", "telemetry"))
sys.path.insert(0, os.path.join(m0test.SOURCE_DIR, "examples", "django"))
from metrics_support import metrics_port, status  # noqa: E402
import temp_postgres  # noqa: E402

POOL_PLUGIN = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-executor-pool.so")
pytestmark = pytest.mark.skipif(not os.path.exists(POOL_PLUGIN), reason="the executor-pool plugin is not built")

PYTHON = {"VIRTUAL_ENV": sys.prefix}
BOUND = 32  # executor.pool.max_threads under growth: blocked


def config(app):
    """No executor section: WSGI runs on the pool with its defaults."""
    return (f"frontend:\n  type: wsgi\n  app: \"{app}\"\n  chdir: {APPS}\n"
            "metrics:\n  listen: \"127.0.0.1:0\"\n")


def pool(port):
    return next(x for x in status(port)["executors"] if x["type"] == "pool")


def concurrently(port, path, n):
    """The bodies of n requests sent at once, each on its own connection."""
    with concurrent.futures.ThreadPoolExecutor(n) as clients:
        answers = list(clients.map(lambda _: m0test.request(port, path=path, timeout=90), range(n)))
    assert all(r.status == 200 for r in answers), [r.status for r in answers]
    return [r.body.decode() for r in answers]


async def _hammer(port, path, connections, seconds):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    done = 0

    async def one():
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        while loop.time() < deadline:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            await reader.readexactly(int(re.search(rb"(?i)content-length: *(\d+)", head).group(1)))
            done += 1
        writer.close()

    await asyncio.gather(*(one() for _ in range(connections)))
    return done


def under_load(server, path, connections=64, seconds=4):
    """Keeps `connections` clients requesting `path` for a few seconds while
    reading /status.json; returns (responses, the pool's snapshots)."""
    port = metrics_port(server)
    result = {}
    client = threading.Thread(target=lambda: result.update(n=asyncio.run(_hammer(server.port, path, connections,
                                                                                   seconds))))
    client.start()
    seen = []
    while client.is_alive():
        seen.append(pool(port))
        client.join(0.1)
    seen.append(pool(port))
    assert "n" in result, server.output()
    return result["n"], seen


def test_flask_views_waiting_on_io_are_served_together_with_the_defaults(m0_server):
    server = m0_server(config("growth_apps:app"), env=PYTHON)
    assert pool(metrics_port(server))["threads"] == 1
    assert concurrently(server.port, "/together/8", 8) == ["together"] * 8
    # The metrics are sampled a few times a second; the threads stay for
    # idle_timeout (30 s).
    port = metrics_port(server)
    server.wait_until(lambda: pool(port)["threads"] >= 8, what="8 pool threads in /status.json")
    assert pool(port)["threads"] <= BOUND


def test_a_page_is_served_while_a_stream_waits_with_the_defaults(m0_server):
    """A streamed response that waits holds its thread; another request is
    served meanwhile (it releases the stream), not after the stream ends."""
    server = m0_server(config("growth_apps:app"), env=PYTHON)
    with server.connect() as sock:
        sock.sendall(b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        received = b""
        while b"first" not in received:
            chunk = sock.recv(4096)
            assert chunk, received
            received += chunk
        assert m0test.request(server.port, path="/release", timeout=60).body == b"ok"
        received += m0test.recv_until_closed(sock, timeout=60)
    assert b"released" in received and b"alone" not in received, received


def test_cpu_bound_views_at_64_connections_do_not_grow_the_pool(m0_server):
    server = m0_server(config("growth_apps:app"), env=PYTHON)
    responses, seen = under_load(server, "/cpu")
    assert responses > 0
    # The load did press: jobs waited for the one thread.
    assert any(x["queue_depth"] > 0 for x in seen), seen
    assert {x["threads"] for x in seen} == {1}, seen
    assert pool(metrics_port(server))["threads"] == 1


def test_a_user_who_sized_the_pool_keeps_the_eager_growth(m0_server):
    server = m0_server(config("growth_apps:app"), "--set", "executor.pool.max_threads=4", env=PYTHON)
    assert concurrently(server.port, "/together/4", 4) == ["together"] * 4
    # Eager: jobs waiting with no idle thread grow the pool to max_threads,
    # computing or not; never beyond.
    _, seen = under_load(server, "/cpu", seconds=3)
    assert max(x["threads"] for x in seen) == 4, seen
    assert pool(metrics_port(server))["threads"] <= 4


@pytest.mark.parametrize("keys, effective", [
    ((), ["growth: blocked", "threads: 1", f"max_threads: {BOUND}"]),
    (("executor.pool.threads=2",), ["growth: eager", "threads: 2", "max_threads: 2"]),
    (("executor.pool.max_threads=8",), ["growth: eager", "threads: 1", "max_threads: 8"]),
])
def test_check_shows_the_growth_and_the_bound(tmp_path, keys, effective):
    path = tmp_path / "m0.yaml"
    path.write_text(config("growth_apps:app"))
    sets = [arg for key in keys for arg in ("--set", key)]
    result = m0test.run_m0("--check", "--config", str(path), *sets, env=dict(os.environ, **PYTHON))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    keys = lines[lines.index("  pool:") + 1:]
    keys = [line.strip() for line in keys[:next((i for i, k in enumerate(keys) if not k.startswith("    ")), None)]]
    for line in effective:
        assert line in keys, (line, keys)


def test_check_prints_the_database_connections_the_bound_implies(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(config("growth_apps:app"))
    # Each process: its 32 threads and up to server.max_written_off (4)
    # written off at a request deadline, which keep their connections.
    for workers, total, warned in ((1, 36, False), (2, 72, False), (3, 108, True)):
        result = m0test.run_m0("--check", "--config", str(path), "--set", f"server.workers={workers}",
                               env=dict(os.environ, **PYTHON))
        assert result.returncode == 0, result.stderr
        assert f"at most {BOUND} thread(s) per process" in result.stderr, result.stderr
        assert f"{workers} process(es) x ({BOUND} threads + 4 written off at a request deadline) = {total}" \
            in result.stderr, result.stderr
        assert ("warning:" in result.stderr) == warned, result.stderr


@pytest.fixture(scope="module")
def postgres():
    with temp_postgres.TempPostgres(max_connections=50) as pg:
        yield pg


def test_django_on_postgresql_waits_together_within_the_bound(m0_server, postgres):
    # libpq names the connections, so other tests' servers are not counted.
    env = dict(postgres.env(), **PYTHON, PGAPPNAME="m0-pool-growth")
    server = m0_server(config("django_pg_app:application"), env=env)
    assert concurrently(server.port, "/together/8", 8) == ["together"] * 8
    # Persistent connections: one per thread that served, held after the
    # requests, and never more than the pool's bound.
    count = int(postgres.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'm0-pool-growth'"))
    assert 8 <= count <= BOUND, count
    port = metrics_port(server)
    server.wait_until(lambda: pool(port)["threads"] >= count, what="the pool's threads in /status.json")


def test_a_thread_written_off_in_a_query_keeps_its_connection_within_the_total(m0_server, postgres):
    # --check's total counts, per process, the pool's bound and the threads
    # written off at a request deadline, which keep their connection until
    # they return: a query stuck past the deadline holds one beside the 32.
    env = dict(postgres.env(), **PYTHON, PGAPPNAME="m0-written-off")
    deadline = f"{int(m0test.scaled(1000))}ms"
    server = m0_server(config("django_pg_app:application") + f"server:\n  request_timeout: {deadline}\n", env=env)
    assert m0test.request(server.port, path="/stuck", timeout=m0test.scaled(60)).status == 504
    server.wait_for_log("its thread is written off and replaced")
    assert concurrently(server.port, "/together/8", 8) == ["together"] * 8
    query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'm0-written-off'"
    stuck = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'm0-written-off' AND query LIKE '%pg_sleep(600)%'"
    assert int(postgres.query(stuck)) == 1
    count = int(postgres.query(query))
    assert 9 <= count <= BOUND + 4, count
