"""The Redis bus end to end: m0 processes that name one redis-server share
their channels. Each test starts its own redis-server (Debian's, installed by
scripts/setup) on a unix socket in its tmp dir, and publishes from m0 and
from redis-py, as a Celery worker or a cron job would."""
import os
import re
import signal
import socket
import subprocess

import pytest
import redis

import m0test
from test_hold import StreamReader, publish, send_get

REDIS_SERVER = "/usr/bin/redis-server"
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
READY = re.compile(r"[Rr]eady to accept connections")


class RedisServer:
    """A redis-server of the test's own: on a unix socket in `directory`, or
    on a loopback TCP port (tcp=True) picked by binding and released just
    before; a port another process took in between is retried."""

    def __init__(self, directory, tcp=False, password=None):
        self.dir = str(directory)
        self.password = password
        self.sock = os.path.join(self.dir, "redis.sock")
        self.tcp = tcp
        self.port = 0
        self.proc = None
        self.log_path = os.path.join(self.dir, "redis.log")

    def url(self):
        return f"redis://127.0.0.1:{self.port}/0" if self.tcp else f"unix://{self.sock}"

    def start(self):
        for _ in range(5):
            if self.tcp and not self.port:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    self.port = s.getsockname()[1]
            if self._start_once():
                return self
            self.port = 0
        raise RuntimeError("redis-server did not start:\n" + self.output())

    def _start_once(self):
        open(self.log_path, "w").close()
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", self.dir, "--logfile", self.log_path]
        if not self.tcp:
            args += ["--unixsocket", self.sock, "--unixsocketperm", "700"]
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = m0test.scaled(20)
        waited = 0.0
        while not READY.search(self.output()):
            if self.proc.poll() is not None:
                return False  # the port was taken: try another
            if waited > deadline:
                raise RuntimeError("redis-server not ready:\n" + self.output())
            try:
                self.proc.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                waited += 0.02
        return True

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def kill(self):
        """As a crash: SIGKILL, no goodbye to its clients."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def client(self):
        if self.tcp:
            return redis.Redis(host="127.0.0.1", port=self.port, password=self.password,
                               socket_timeout=m0test.scaled(10))
        return redis.Redis(unix_socket_path=self.sock, password=self.password, socket_timeout=m0test.scaled(10))

    def wait_subscribers(self, channel, count, server):
        """Waits until `count` connections subscribe to m0's `channel`: each
        serving process with a hold on it has one."""
        with self.client() as c:
            server.wait_until(lambda: c.pubsub_numsub("m0:" + channel)[0][1] == count, timeout=20,
                              what=f"{count} subscriber(s) of m0:{channel} in Redis")


@pytest.fixture
def redis_server(tmp_path):
    started = []

    def start(tcp=False, password=None):
        server = RedisServer(tmp_path, tcp=tcp, password=password).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def config(bus, workers=1, extra=""):
    return (
        "server:\n"
        f"  workers: {workers}\n"
        "  drain_timeout: 10s\n"
        "frontend:\n"
        "  type: wsgi\n"
        "  app: \"hold_apps:app\"\n"
        f"  chdir: {APPS}\n"
        "executor:\n"
        "  type: pool\n"
        "  pool: {threads: 2, max_threads: 2}\n"
        "realtime:\n"
        f"  bus: \"{bus}\"\n"
        # Retries soon after Redis comes back, whatever the backoff reached.
        "  redis: {reconnect_max: 200ms}\n"
        f"{extra}"
    )


def hold(server, tag, count=1):
    """An SSE hold on "news" whose head has arrived."""
    sock = server.connect(timeout=20)
    send_get(sock, f"/hold?mode=sse&tag={tag}")
    server.wait_for_log(f"held {tag}", count=count)
    reader = StreamReader(sock, timeout=20)
    assert reader.head()[0] == 200
    return sock, reader


def bus_stats(server):
    """(published, delivered, lost, reconnects) from each process's stop report."""
    pattern = r"realtime: bus \S+: (\d+) published, (\d+) delivered, (\d+) lost, (\d+) reconnects"
    return [tuple(map(int, m)) for m in re.findall(pattern, server.output())]


def test_two_processes_and_redis_py_reach_every_hold(m0_server, redis_server):
    rs = redis_server()
    # A fast heartbeat: a client that left is noticed at the next write.
    a = m0_server(config(rs.url(), extra="  sse: {heartbeat: 100ms}\n"))
    b = m0_server(config(rs.url(), extra="  sse: {heartbeat: 100ms}\n"))
    a_sock, a_reader = hold(a, "a")
    b_sock, b_reader = hold(b, "b")
    with a_sock, b_sock, rs.client() as r:
        rs.wait_subscribers("news", 2, a)
        publish(a, b"from a", event="greet")
        for reader in (a_reader, b_reader):
            assert reader.event() == {"event": "greet", "data": "from a"}
        publish(b, b"from b\nsecond line")
        for reader in (a_reader, b_reader):
            assert reader.event() == {"data": "from b\nsecond line"}
        # A plain PUBLISH from any client is the data, whole; an event name
        # travels in a NUL-led frame (docs/realtime.md).
        assert r.publish("m0:news", b"from redis-py") == 2
        assert r.publish("m0:news", b"\x00progress\n{\"pct\": 40}") == 2
        assert r.publish("m0:elsewhere", b"nobody holds it") == 0
        for reader in (a_reader, b_reader):
            assert reader.event() == {"data": "from redis-py"}
            assert reader.event() == {"event": "progress", "data": "{\"pct\": 40}"}
    # The last hold of each process gone, it unsubscribes.
    rs.wait_subscribers("news", 0, a)
    assert a.stop() == 0 and b.stop() == 0
    for server in (a, b):
        (published, delivered, lost, reconnects), = bus_stats(server)
        assert (published, delivered, lost, reconnects) == (1, 4, 0, 0), server.output()


def test_workers_share_the_bus_over_tcp(m0_server, redis_server):
    """server.workers: 2 on one Redis over TCP: holds in both processes (each
    one subscribes once), a publish from m0 and one from redis-py reach all."""
    rs = redis_server(tcp=True)
    server = m0_server(config(rs.url(), workers=2))
    holds = []
    with rs.client() as r:
        # The kernel spreads connections over the two processes: hold until
        # both have one (each process subscribes once).
        while r.pubsub_numsub("m0:news")[0][1] < 2:
            assert len(holds) < 64, "every hold landed in one process"
            holds.append(hold(server, f"w{len(holds)}", count=1))
            server.wait_until(lambda: r.pubsub_numsub("m0:news")[0][1] >= 1, what="a subscriber")
        publish(server, b"from a worker")
        for sock, reader in holds:
            assert reader.event() == {"data": "from a worker"}
        # Only now: m0's PUBLISH may still be on its way to Redis when
        # publish() returns (see test_holds_survive_redis_restarting).
        assert r.publish("m0:news", b"from redis-py") == 2
        for sock, reader in holds:
            assert reader.event() == {"data": "from redis-py"}
            sock.close()
    assert server.stop() == 0
    stats = bus_stats(server)
    assert len(stats) == 2 and sum(s[0] for s in stats) == 1 and all(s[2] == 0 for s in stats), stats


def test_a_hold_listens_across_processes_once_the_view_returned(m0_server, redis_server):
    """The registration promise of the hold path over Redis: m0.hold() returns
    once Redis confirmed the subscription, so a publish that another client
    sends straight to Redis the moment the view goes on reaches the hold."""
    rs = redis_server()
    server = m0_server(config(rs.url()))
    for round_ in range(10):
        # A channel of its own each round: the first hold on it subscribes.
        channel = f"race{round_}"
        with server.connect(timeout=20) as sock:
            send_get(sock, f"/hold-then-redis-publish?channel={channel}&redis={rs.sock}")
            reader = StreamReader(sock, timeout=20)
            assert reader.head()[0] == 200
            server.wait_for_log(f"redis-published {channel} to ")
            assert f"redis-published {channel} to 1" in server.output(), f"round {round_}"
            assert reader.event() == {"data": "right after"}


def test_holds_survive_redis_restarting(m0_server, redis_server):
    rs = redis_server()
    server = m0_server(config(rs.url()))
    sock, reader = hold(server, "r")
    with sock:
        rs.wait_subscribers("news", 1, server)
        publish(server, b"before")
        assert reader.event() == {"data": "before"}

        rs.kill()
        server.wait_for_log("redis publisher: lost connection to")
        server.wait_for_log("redis subscriber: lost connection to")
        # Redis is down: the publish returns at once, is counted and logged.
        publish(server, b"while down")
        server.wait_for_log(re.compile(r"realtime: 1 publishes lost .*; 1 in all"))

        rs.start()  # the same socket path
        server.wait_for_log("redis subscriber reconnected to")
        server.wait_for_log("redis publisher reconnected to")
        rs.wait_subscribers("news", 1, server)  # subscribed again on its own
        # The same connection, still held: what was lost never comes.
        publish(server, b"after")
        assert reader.event() == {"data": "after"}
        # m0.publish returns before its PUBLISH reaches Redis, so redis-py
        # publishes only once m0's message arrived: two publishers' order
        # is Redis's arrival order, which the test must not assume.
        with rs.client() as r:
            assert r.publish("m0:news", b"after, from redis-py") == 1
        assert reader.event() == {"data": "after, from redis-py"}
    assert server.stop() == 0
    (published, delivered, lost, reconnects), = bus_stats(server)
    assert (published, delivered, lost, reconnects) == (2, 3, 1, 2), server.output()


def test_a_password_in_the_url_authenticates(m0_server, redis_server):
    rs = redis_server(password="s@cret")
    server = m0_server(config(f"unix://:s%40cret@{rs.sock}"))
    wrong = m0_server(config(f"unix://:guess@{rs.sock}"))
    sock, reader = hold(server, "auth")
    with sock:
        rs.wait_subscribers("news", 1, server)
        publish(server, b"authenticated")
        assert reader.event() == {"data": "authenticated"}
    wrong.wait_for_log("redis publisher: no connection to unix://:***@")
    assert "AUTH refused" in wrong.output() and "guess" not in wrong.output() and "s@cret" not in server.output()


def test_m0_serves_while_redis_is_unreachable(m0_server, tmp_path):
    # No redis-server at that path: m0 starts, serves, and counts what it
    # could not publish instead of failing the view.
    server = m0_server(config(f"unix://{tmp_path}/nobody.sock"))
    server.wait_for_log("redis publisher: no connection to")
    publish(server, b"nowhere")
    assert m0test.request(server.port, "GET", "/nowhere").status == 404
    server.wait_for_log(re.compile(r"realtime: 1 publishes lost"))


def test_a_bad_redis_url_is_a_located_config_error(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(config("redis://127.0.0.1:99999/0"))
    r = m0test.run_m0("--config", str(path), "--check")
    assert r.returncode == 2, r.stderr
    assert f"{path}:" in r.stderr and "realtime.bus" in r.stderr, r.stderr
    assert "port must be a number 1..65535, not '99999'" in r.stderr, r.stderr


def test_check_accepts_several_workers_on_redis(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(config("unix:///run/redis/redis.sock", workers=2))
    r = m0test.run_m0("--config", str(path), "--check")
    assert r.returncode == 0, r.stderr
    assert "unix:///run/redis/redis.sock" in r.stdout
