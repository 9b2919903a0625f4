"""Plugin lifecycle as a deployment sees it: a module plugin loaded by its
section, a service it provides found by a frontend, and the order of the
per-process and per-worker hooks, in one process and under server.workers."""
import os
import re
import sys
import tempfile

import m0test

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from prefork_support import wait_for_children, wait_until  # noqa: E402

PLUGIN_DIR = os.environ.get("M0_HOOKTRACE_PLUGIN_DIR",
                            os.path.join(m0test.BUILD_DIR, "tests", "core", "plugin", "hooktrace-plugins"))
HOOK = re.compile(r"hook (module|frontend) (\w+) pid=(\d+)(.*)")


def config(module_section="greeter:\n  greeting: hi from the module\n", extra=""):
    return f"plugins:\n  path: [{PLUGIN_DIR}]\n{module_section}frontend:\n  type: greeting\n{extra}"


def write_config(text):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    return f.name


def hooks(output):
    """[(who, hook, pid, rest)] in log order."""
    found = []
    for line in output.splitlines():
        m = HOOK.search(line)
        if m:
            found.append((m.group(1), m.group(2), int(m.group(3)), m.group(4).strip()))
    return found


def names(entries):
    return [f"{who} {hook}" for who, hook, _, _ in entries]


def test_module_service_reaches_the_frontend_and_hooks_run_in_order(m0_server):
    server = m0_server(config(), threads=2)
    r = m0test.request(server.port, path="/")
    assert r.status == 200 and r.body == b"hi from the module\n"
    assert server.stop() == 0
    seen = hooks(server.output())
    assert ("frontend", "constructed", server.proc.pid, "service=found") in seen
    order = names(seen)
    # Built, prepared and started module first; stopped in reverse.
    assert order[:6] == ["module constructed", "frontend constructed", "module prepare", "frontend prepare",
                         "module start_serving", "frontend start_serving"]
    assert order[-2:] == ["frontend stop_serving", "module stop_serving"]
    middle = order[6:-2]
    assert sorted(middle) == sorted(["module start_reactor", "frontend start_reactor"] * 2 +
                                    ["module stop_reactor", "frontend stop_reactor"] * 2)
    # Per worker: the module's start before the frontend's, its stop after.
    for worker in ("worker=0", "worker=1"):
        per = [f"{who} {hook}" for who, hook, _, rest in seen if rest == worker]
        assert per == ["module start_reactor", "frontend start_reactor", "frontend stop_reactor", "module stop_reactor"]
    # Every stop_reactor comes after every start_reactor: no worker stops before all started serving.
    assert all(h.endswith("start_reactor") for h in middle[:4])


def test_hooks_run_in_each_serving_process(m0_server):
    server = m0_server(config(extra="server:\n  workers: 2\n"), threads=1)
    pids = wait_for_children(server.proc.pid, 2)
    wait_until(lambda: sum("frontend start_reactor" in l for l in server.output().splitlines()) >= 2,
               what="both processes serving")
    assert m0test.request(server.port, path="/").body == b"hi from the module\n"
    assert server.stop() == 0
    seen = hooks(server.output())
    supervisor = server.proc.pid
    # Plugins are built once, before the fork...
    assert [(w, h) for w, h, pid, _ in seen if h == "constructed"] == [("module", "constructed"),
                                                                     ("frontend", "constructed")]
    assert all(pid == supervisor for _, h, pid, _ in seen if h == "constructed")
    # ...and each serving process runs the rest, in order, after its fork.
    for pid in pids:
        own = [(w, h, rest) for w, h, p, rest in seen if p == pid]
        assert [f"{w} {h}" for w, h, _ in own] == [
            "module after_fork_child", "frontend after_fork_child", "module prepare", "frontend prepare",
            "module start_serving", "frontend start_serving", "module start_reactor", "frontend start_reactor",
            "frontend stop_reactor", "module stop_reactor", "frontend stop_serving", "module stop_serving"]
    indexes = sorted(rest for _, h, p, rest in seen if h == "start_serving" and p in pids and _ == "module")
    assert indexes == ["process=0/2", "process=1/2"]
    assert not [h for _, h, p, _ in seen if p == supervisor and h != "constructed"]


def test_without_its_section_the_module_is_not_loaded(m0_server):
    server = m0_server(config(module_section=""))
    r = m0test.request(server.port, path="/")
    assert r.status == 503 and r.body == b"no greeting service\n"
    assert "service=missing" in server.output()
    assert "hook module" not in server.output()


def test_a_start_serving_failure_exits_1_with_the_plugins_message():
    path = write_config(config("greeter:\n  fail_at: start_serving\n"))
    r = m0test.run_m0("--config", path, "--listen", "127.0.0.1:0")
    assert r.returncode == 1, r.stderr
    assert "m0: cannot start: greeter: refusing to start as configured" in r.stderr
    # Nothing had started that would need stopping, and no worker ran.
    assert "start_reactor" not in r.stderr


def test_unknown_sections_are_config_errors_at_their_line():
    path = write_config(config(extra="sever:\n  threads: 2\n"))
    r = m0test.run_m0("--check", "--config", path)
    assert r.returncode == 2
    assert re.search(r":7:1: sever: unknown section 'sever' \(did you mean 'server'\?\)", r.stderr), r.stderr

    path = write_config(config(extra="greter:\n  greeting: x\n"))
    r = m0test.run_m0("--check", "--config", path)
    assert r.returncode == 2
    assert "greter: unknown section 'greter': neither a core section nor a module plugin" in r.stderr


def test_a_section_nothing_reads_is_refused():
    path = write_config("frontend:\n  type: http\npython:\n  path: [src]\n")
    r = m0test.run_m0("--check", "--config", path)
    assert r.returncode == 2
    assert "python: unknown section 'python': neither a core section nor a module plugin (m0-module-python.so) " \
        "found in the plugin path, and no plugin of this deployment reads it" in r.stderr
