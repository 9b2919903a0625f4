"""The installable SDK: `cmake --install` gives a prefix from which
examples/hello-plugin (a frontend), examples/single-reactor-scheduler (a
scheduler) and examples/condvar-pool-executor (an executor) build out of tree
with find_package(m0); m0 then lists the plugins, loads them and serves with
them (tests/python/test_wheel.py builds the three against the wheel's SDK)."""
import glob
import os
import pathlib
import re
import signal
import sys
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import m0test  # noqa: E402
from support.sdk_examples import SINGLE, build_example, condvar_config, meet_side_by_side, run  # noqa: E402

CMAKE = os.environ.get("M0_CMAKE", "cmake")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=m0test.scaled(10)) as r:
        return r.read().decode()


@pytest.fixture(scope="module")
def sdk(tmp_path_factory):
    """Installs the SDK into a fresh prefix and builds the examples against it."""
    root = tmp_path_factory.mktemp("sdk")
    prefix = root / "prefix"
    run([CMAKE, "--install", m0test.BUILD_DIR, "--prefix", str(prefix)])
    built = {}
    for name in ("hello", "single", "condvar"):
        plugin = build_example(name, root / f"{name}-build", prefix)
        built[name] = (root / f"{name}-build", pathlib.Path(plugin))
    return {"prefix": prefix, "build": built["hello"][0], "plugin": built["hello"][1],
            "scheduler_build": built["single"][0], "scheduler": built["single"][1],
            "executor_build": built["condvar"][0], "executor": built["condvar"][1]}


def test_sdk_installs_headers_library_and_package(sdk):
    prefix = sdk["prefix"]
    assert (prefix / "include" / "m0" / "plugin.hpp").is_file()
    assert glob.glob(str(prefix / "lib*" / "libm0core.so*"))
    assert glob.glob(str(prefix / "lib*" / "cmake" / "m0" / "m0Config.cmake"))
    # The installed m0 runs from the prefix (its RPATH finds the installed core).
    version = run([str(prefix / "bin" / "m0"), "--version"])
    with open(os.path.join(m0test.SOURCE_DIR, "core", "include", "m0", "version.hpp")) as f:
        release = re.search(r'M0_VERSION_STRING "([^"]+)"', f.read()).group(1)
    assert version.stdout.startswith(f"m0 {release}\n")


def test_example_builds_out_of_tree_against_the_installed_package(sdk):
    assert sdk["plugin"].is_file()
    # find_package(m0) resolved to the installed prefix, not to the build tree.
    cache = (sdk["build"] / "CMakeCache.txt").read_text()
    m0_dir = next(line.split("=", 1)[1] for line in cache.splitlines() if line.startswith("m0_DIR:"))
    assert m0_dir.startswith(str(sdk["prefix"])), m0_dir


def test_m0_plugins_lists_it(sdk):
    out = m0test.run_m0("plugins", env={"M0_PLUGIN_PATH": str(sdk["build"])})
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line for line in out.stdout.splitlines() if str(sdk["plugin"]) in line]
    assert len(lines) == 1, out.stdout
    assert "hello" in lines[0] and "frontend" in lines[0]
    assert "refused" not in lines[0].lower()


def test_installed_m0_finds_the_installed_plugin_without_a_path(sdk):
    # m0_add_plugin's install rule puts it in <prefix>/lib/m0/plugins, which
    # the installed bin/m0 searches by default.
    run([CMAKE, "--install", str(sdk["build"]), "--prefix", str(sdk["prefix"])])
    env = {k: v for k, v in os.environ.items() if k != "M0_PLUGIN_PATH"}
    out = run([str(sdk["prefix"] / "bin" / "m0"), "plugins"], env=env, cwd=str(sdk["prefix"]))
    lines = [line for line in out.stdout.splitlines() if "m0-frontend-hello.so" in line]
    assert len(lines) == 1, out.stdout
    assert str(sdk["prefix"]) in lines[0] and "refused" not in lines[0].lower()


def serve_and_get(sdk, frontend_yaml, path):
    config = f"plugins:\n  path: [{sdk['build']}]\nfrontend:\n  type: hello\n{frontend_yaml}"
    server = m0test.Server(config)
    try:
        server.start()
        resp = m0test.request(server.port, "GET", path)
        code = server.stop(signal.SIGTERM)
    finally:
        m0test.finish_servers([server])
    assert code == 0, server.output()
    return resp


def test_m0_serves_with_the_out_of_tree_plugin(sdk):
    resp = serve_and_get(sdk, '  body: "Hi from out of tree\\n"\n', "/anything?x=1")
    assert resp.status == 200
    assert resp.body == b"Hi from out of tree\n"


def test_body_defaults_when_not_configured(sdk):
    resp = serve_and_get(sdk, "", "/")
    assert resp.status == 200
    assert resp.body == b"Hello from a plugin!\n"


def test_the_out_of_tree_scheduler_is_listed_serves_and_drains(sdk):
    out = m0test.run_m0("plugins", env={"M0_PLUGIN_PATH": str(sdk["scheduler_build"])})
    lines = [line for line in out.stdout.splitlines() if str(sdk["scheduler"]) in line]
    assert len(lines) == 1 and "single" in lines[0] and "scheduler" in lines[0], out.stdout
    config = f"plugins:\n  path: [{sdk['scheduler_build']}]\n" + SINGLE
    server = m0test.Server(config)
    try:
        server.start()
        assert "(scheduler single)" in server.output()
        for _ in range(10):
            assert m0test.request(server.port, "GET", "/hello").body == b"Hello, World!"
        # A request in flight when the drain begins is answered, then m0 exits 0.
        with server.open_request("/slow") as s:
            server.send_signal(signal.SIGTERM)
            assert m0test.ResponseReader(s, timeout=10).read().body == b"slow done"
        assert server.wait(timeout=30) == 0
    finally:
        m0test.finish_servers([server])
    assert "reactor 0: accepted 11, requests 11, open at drain 1, drained 1, force-closed 0" in server.output()


def test_the_out_of_tree_scheduler_refuses_what_it_cannot_serve(sdk, tmp_path):
    config = tmp_path / "single.yaml"
    config.write_text(f"plugins:\n  path: [{sdk['scheduler_build']}]\n" + SINGLE)
    r = m0test.run_m0("--config", str(config), "--listen", "127.0.0.1:0", "--threads", "2")
    assert r.returncode == 1
    assert "m0: cannot start: server.threads must be 1 with scheduler 'single', got 2" in r.stderr


def test_the_out_of_tree_executor_is_listed_and_checks_its_keys(sdk, tmp_path):
    out = m0test.run_m0("plugins", env={"M0_PLUGIN_PATH": str(sdk["executor_build"])})
    lines = [line for line in out.stdout.splitlines() if str(sdk["executor"]) in line]
    assert len(lines) == 1 and lines[0].startswith("condvar\texecutor\t"), out.stdout
    # Its keys are validated as m0's own are: every error, each at file:line:column.
    bad = tmp_path / "bad.yaml"
    bad.write_text(condvar_config(sdk["executor_build"]).replace("{threads: 2}", "{threads: 0, thread: 2}"))
    r = m0test.run_m0("--check", "--config", str(bad))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{bad}:6:22: executor.condvar.threads: expected an integer in 1..256, found '0'" in r.stderr, r.stderr
    assert f"{bad}:6:25: executor.condvar.thread: unknown key 'thread' (did you mean 'threads'?)" in r.stderr, r.stderr
    # Its keys without `executor.type: condvar` are an error: WSGI's default is `pool`.
    untyped = tmp_path / "untyped.yaml"
    untyped.write_text(condvar_config(sdk["executor_build"]).replace("  type: condvar\n", ""))
    r = m0test.run_m0("--check", "--config", str(untyped))
    assert r.returncode == 2, r.stdout + r.stderr
    assert (f"{untyped}:5:3: executor.condvar: settings for executor 'condvar' but the effective executor is 'pool' "
            "(the frontend's default); set executor.type: condvar to run on it") in r.stderr, r.stderr


def test_the_out_of_tree_executor_serves_wsgi_side_by_side_and_drains(sdk, m0_server, tmp_path):
    config = condvar_config(sdk["executor_build"]) + 'metrics: {listen: "127.0.0.1:0"}\n'
    server = m0_server(config, env={"VIRTUAL_ENV": sys.prefix})
    assert "executor condvar" in server.output()
    # Two requests are inside the view at once (each waits for the other),
    # on two of the executor's threads.
    bodies = meet_side_by_side(server.port)
    assert bodies == ["met on m0-condvar-0", "met on m0-condvar-1"], (bodies, server.output())
    # Its stats() are the executor series of /metrics.
    metrics = int(server.wait_for_log(re.compile(r"metrics: /metrics and /status\.json on http://127\.0\.0\.1:(\d+)"))
                  .group(1))
    labels = 'executor="default",type="condvar"'
    server.wait_until(lambda: f"m0_executor_jobs_done_total{{{labels}}} 2\n" in scrape(metrics),
                      what="two condvar jobs done in /metrics")
    text = scrape(metrics)
    for series in (f'm0_executor_threads{{{labels},state="busy"}} 0', f"m0_executor_queue_depth{{{labels}}} 0",
                   f"m0_executor_queue_wait_seconds_count{{{labels}}} 2"):
        assert series + "\n" in text, text
    # A request in flight when the drain begins is answered, then m0 exits 0.
    release = tmp_path / "release"
    with server.open_request(f"/slow?release={release}") as s:
        server.wait_for_log("slow view started on m0-condvar-")
        server.send_signal(signal.SIGTERM)
        server.wait_for_log("received SIGTERM, draining")
        release.touch()
        assert m0test.ResponseReader(s, timeout=30).read().body == b"slow done"
        assert server.wait(timeout=30) == 0, server.output()
    assert "open at drain 1, drained 1, force-closed 0" in server.output()


def test_a_job_that_never_returns_does_not_hold_the_exit(sdk, m0_server):
    server = m0_server(condvar_config(sdk["executor_build"]), "--set", "server.drain_timeout=1s", env={"VIRTUAL_ENV": sys.prefix})
    with server.open_request("/stuck") as stuck:
        stuck_on = server.wait_for_log(re.compile(r"stuck view entered on (m0-condvar-\d)")).group(1)
        # The other thread still serves.
        other = m0test.request(server.port, path="/")
        assert other.status == 200 and other.body.decode().startswith("m0-condvar-")
        assert other.body.decode() != stuck_on
        server.send_signal(signal.SIGTERM)
        # The drain ends at its deadline, stop(grace) leaves the thread inside
        # the view, and the process exits 0 without waiting for it.
        assert server.wait(timeout=30) == 0, server.output()
        assert m0test.recv_until_closed(stuck) == b""  # cut, not answered
    out = server.output()
    assert "condvar: 1 thread(s) still inside a job at shutdown; left running" in out, out
    assert "stopped, leaving 1 thread(s) inside application code" in out, out
