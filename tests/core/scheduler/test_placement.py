"""Where connections land, as an operator sees it in /status.json and
/metrics: `balanced` places a burst exactly (spread at most one), `reactors`
with a shared listener shares it out; and the scheduler as a deployment
chooses it (`scheduler:`, --scheduler, --check, errors)."""
import os
import signal
import socket
import sys

import pytest

import m0test

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "telemetry"))
from metrics_support import metrics_port, samples, status, value  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import prefork_support  # noqa: E402

CONFIG = """
frontend:
  type: http
  routes:
    - {path: /hello, body: "Hello, World!"}
"""


def burst(port, n):
    """Opens n connections at once; each completes in the kernel's backlog."""
    return [socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(10)) for _ in range(n)]


def open_per_reactor(server, metrics, n):
    """Waits until the reactors hold n connections; their open counts."""
    def held():
        reactors = status(metrics)["processes"][0]["reactors"]
        counts = [r["connections_open"] for r in reactors]
        return counts if sum(counts) == n else None
    return server.wait_until(held, what=f"{n} connections open")


def test_balanced_places_a_burst_of_257_on_4_reactors_as_64_64_64_65(m0_server):
    server = m0_server(CONFIG, "--scheduler", "balanced", "--set", "metrics.listen=127.0.0.1:0", threads=4)
    metrics = metrics_port(server)
    clients = burst(server.port, 257)
    try:
        assert sorted(open_per_reactor(server, metrics, 257)) == [64, 64, 64, 65]
        found = samples(metrics)
        per_reactor = [value(found, "m0_reactor_connections_open", process="0", reactor=str(r)) for r in range(4)]
        assert sorted(per_reactor) == [64, 64, 64, 65]
        accepted = [value(found, "m0_reactor_connections_accepted_total", process="0", reactor=str(r))
                    for r in range(4)]
        assert sum(accepted) == 257
        # Every placed connection is served where it landed.
        for c in clients[:16]:
            c.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            assert m0test.ResponseReader(c).read().body == b"Hello, World!"
    finally:
        for c in clients:
            c.close()
    assert server.stop() == 0


def test_reactors_with_a_shared_listener_split_a_burst_no_worse_than_two_thirds(m0_server):
    server = m0_server(CONFIG, "--set", "scheduler.listener=shared", "--set", "metrics.listen=127.0.0.1:0",
                       threads=2)
    metrics = metrics_port(server)
    clients = burst(server.port, 257)
    try:
        # Without the sharing a burst lands whole on the reactor that happens
        # to run (257/0). With it the split is near 50/50 on a quiet machine;
        # on CI's two busy cores a reactor that gets no CPU while the other
        # sits out its pauses cannot take its share (by design, the running
        # one then goes on: a stalled reactor must not stop accepting), and
        # 156/101 was seen. Two thirds is what the sharing guarantees there.
        assert max(open_per_reactor(server, metrics, 257)) <= 171  # 2/3 of 257
    finally:
        for c in clients:
            c.close()
    assert server.stop() == 0


def open_per_process(server, metrics, n):
    """Waits until the serving processes hold n connections; their open counts."""
    def held():
        counts = [sum(r["connections_open"] for r in p["reactors"]) for p in status(metrics)["processes"]]
        return counts if sum(counts) == n else None
    return server.wait_until(held, what=f"{n} connections open")


SCHEDULERS = pytest.mark.parametrize("scheduler", ["reactors", "balanced"])


@SCHEDULERS
def test_worker_processes_share_one_socket_and_split_a_burst_by_default(m0_server, scheduler):
    server = m0_server(CONFIG, "--workers", "2", "--scheduler", scheduler, "--set", "metrics.listen=127.0.0.1:0",
                       threads=1)
    assert "one shared socket per address" in server.output()
    metrics = metrics_port(server)
    clients = burst(server.port, 96)
    try:
        # Each process looks at the other's connections before it accepts,
        # and sits out while it is ahead and the other waits for one: on a
        # quiet machine a burst ends 48/48 or 47/49. Left to the kernel, the
        # process that happens to run takes most of it (56/8 and 59/5 were
        # seen for 64 before the processes looked at each other); on CI's two
        # busy cores a process that gets no CPU cannot take its share (the
        # other then goes on: a stalled process must not stop the accepting),
        # so what is asserted is the two-thirds the sharing guarantees there.
        assert max(open_per_process(server, metrics, 96)) <= 64
    finally:
        for c in clients:
            c.close()
    assert server.stop() == 0


@SCHEDULERS
def test_a_stopped_worker_process_does_not_stop_the_others_from_accepting(m0_server, scheduler):
    server = m0_server(CONFIG, "--workers", "2", "--scheduler", scheduler, threads=1)
    stopped = prefork_support.wait_for_children(server.proc.pid, 2)[0]
    os.kill(stopped, signal.SIGSTOP)
    # Stopped once the kernel says so: until then it may still take (and
    # then hold) a connection.
    prefork_support.wait_until(lambda: prefork_support.state(stopped) == "T", what=f"process {stopped} stopped")
    try:
        # Every new connection reaches the live process: with a socket per
        # process, the kernel would queue about half of them on the stopped
        # one's; here the live one stops deferring to a process that says it
        # waits but takes nothing.
        for _ in range(200):
            with socket.create_connection(("127.0.0.1", server.port), timeout=m0test.scaled(10)) as s:
                s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert m0test.ResponseReader(s, timeout=10).read().body == b"Hello, World!"
    finally:
        os.kill(stopped, signal.SIGCONT)
    assert server.stop() == 0


@SCHEDULERS
def test_check_shows_the_shared_listener_as_the_default_for_several_processes(scheduler):
    r = m0test.run_m0("--config", "configs/hello.yaml", "--workers", "2", "--scheduler", scheduler, "--check")
    assert r.returncode == 0, r.stderr
    assert f"scheduler:\n  type: {scheduler}\n  listener: shared" in r.stdout
    r = m0test.run_m0("--config", "configs/hello.yaml", "--workers", "2", "--scheduler", scheduler,
                      "--set", "scheduler.listener=reuseport", "--check")
    assert r.returncode == 0, r.stderr
    assert f"scheduler:\n  type: {scheduler}\n  listener: reuseport" in r.stdout


@pytest.mark.parametrize("workers", ["1", "2"])
def test_balanced_serves_several_addresses_proxy_listeners_and_workers(m0_server, workers):
    server = m0_server(CONFIG, "--scheduler", "balanced", "--workers", workers,
                       "--set", 'server.listen=["127.0.0.1:0", "127.0.0.1:0 proxy"]', threads=2)
    plain, proxied = server.ports
    for _ in range(10):
        assert m0test.request(plain, path="/hello").body == b"Hello, World!"
    with socket.create_connection(("127.0.0.1", proxied), timeout=m0test.scaled(10)) as s:
        s.sendall(b"PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        assert m0test.ResponseReader(s).read().body == b"Hello, World!"
    with socket.create_connection(("127.0.0.1", proxied), timeout=m0test.scaled(10)) as s:
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")  # no PROXY header: refused
        assert m0test.recv_until_closed(s) == b""
    assert server.stop() == 0


def test_check_prints_the_effective_scheduler_and_its_keys():
    r = m0test.run_m0("--config", "configs/hello.yaml", "--check")
    assert r.returncode == 0, r.stderr
    assert "scheduler:\n  type: reactors\n  listener: reuseport" in r.stdout
    r = m0test.run_m0("--config", "configs/hello.yaml", "--scheduler", "balanced", "--check")
    assert r.returncode == 0, r.stderr
    assert "scheduler:\n  type: balanced\n  listener: reuseport" in r.stdout


def test_the_older_spelling_server_listener_still_works(tmp_path):
    config = tmp_path / "old.yaml"
    config.write_text("server: {listener: shared}\n" + CONFIG)
    r = m0test.run_m0("--config", str(config), "--check")
    assert r.returncode == 0, r.stderr
    assert "listener: shared" in r.stdout.split("scheduler:", 1)[1]
    r = m0test.run_m0("--config", str(config), "--set", "scheduler.listener=reuseport", "--check")
    assert r.returncode == 2
    assert ("scheduler.listener: 'reuseport' but server.listener (its older spelling) says 'shared': "
            "set only one of them") in r.stderr


def test_an_unknown_scheduler_is_a_config_error_with_its_place_and_a_suggestion(tmp_path):
    config = tmp_path / "typo.yaml"
    config.write_text("scheduler:\n  type: balance\n" + CONFIG)
    r = m0test.run_m0("--config", str(config), "--check")
    assert r.returncode == 2
    assert f"{config}:2:9: scheduler.type: no scheduler plugin 'balance' (did you mean 'balanced'?)" in r.stderr
    assert "scheduler plugins found: balanced, reactors" in r.stderr


def test_an_unknown_scheduler_key_is_refused(tmp_path):
    config = tmp_path / "key.yaml"
    config.write_text("scheduler:\n  type: balanced\n  listner: shared\n" + CONFIG)
    r = m0test.run_m0("--config", str(config), "--check")
    assert r.returncode == 2
    assert "scheduler.listner: unknown key 'listner' (did you mean 'listener'?)" in r.stderr


def test_no_scheduler_plugin_found_is_a_config_error(tmp_path):
    # An m0 whose plugin directory holds the http frontend and no scheduler.
    import glob
    import shutil
    import subprocess
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib" / "m0" / "plugins").mkdir(parents=True)
    shutil.copy(m0test.M0_BINARY, tmp_path / "bin" / "m0")
    for lib in glob.glob(os.path.join(m0test.BUILD_DIR, "lib", "libm0core.so*")):
        os.symlink(lib, tmp_path / "lib" / os.path.basename(lib))
    os.symlink(os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-frontend-http.so"),
               tmp_path / "lib" / "m0" / "plugins" / "m0-frontend-http.so")
    r = subprocess.run([str(tmp_path / "bin" / "m0"), "--config", "configs/hello.yaml", "--check"],
                       capture_output=True, text=True, timeout=m0test.scaled(30), cwd=m0test.SOURCE_DIR,
                       env={k: v for k, v in os.environ.items() if k != "M0_PLUGIN_PATH"})
    assert r.returncode == 2
    assert "scheduler.type: no scheduler plugin 'reactors'" in r.stderr
    assert "scheduler plugins found: none" in r.stderr or "no scheduler plugins found" in r.stderr, r.stderr


# Not with reuseport: the kernel queues a connection on one reactor's socket,
# which waits for that reactor to have room whichever closes one.
@pytest.mark.parametrize("scheduler", [["--set", "scheduler.listener=shared"], ["--scheduler", "balanced"]],
                         ids=["reactors-shared", "balanced"])
def test_accepting_pauses_at_the_connection_limit_and_resumes_below_it(m0_server, scheduler):
    server = m0_server(CONFIG, *scheduler, "--set", "http.max_connections_per_reactor=2", threads=2)
    request = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
    held = []
    for _ in range(4):  # two per reactor: every reactor is full
        s = socket.create_connection(("127.0.0.1", server.port), timeout=m0test.scaled(10))
        s.sendall(request)
        assert m0test.ResponseReader(s).read().body == b"Hello, World!"
        held.append(s)
    waiting = socket.create_connection(("127.0.0.1", server.port), timeout=m0test.scaled(10))
    waiting.sendall(request)
    # Left in the kernel's backlog: no reactor takes it while all are full.
    waiting.settimeout(1.0)
    with pytest.raises(socket.timeout):
        waiting.recv(1)
    # A close makes room; the waiting connection is taken and answered.
    held.pop(0).close()
    waiting.settimeout(m0test.scaled(10))
    assert m0test.ResponseReader(waiting, timeout=10).read().body == b"Hello, World!"
    for s in held + [waiting]:
        s.close()
    assert server.stop() == 0
