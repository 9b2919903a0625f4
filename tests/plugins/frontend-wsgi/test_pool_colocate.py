"""executor.pool.colocate in served processes: with pinned reactors
(server.pin_cores, the default) a pool thread runs its jobs on its process's
reactor core when colocate is on (`true`, or `auto` with a reactor per core),
and on every core when it is off; `m0 --check` shows what `auto` resolved to."""
import os
import re

import pytest

import m0test
from conftest import POOL_PLUGIN, wsgi_config

pytestmark = pytest.mark.skipif(not os.path.exists(POOL_PLUGIN), reason="the executor-pool plugin is not built")

CONFIG = wsgi_config("pid_app:app", "pool")
ALL_CPUS = os.sched_getaffinity(0)  # m0 inherits the test's


def pool_cpus_after_a_request(server, pids):
    """{pid: the CPUs of its m0-pool-0 thread} once each of `pids` has answered a request."""
    answered = set()
    for _ in range(500):
        if answered >= pids:
            break
        answered.add(int(m0test.request(server.port).body))
    assert answered >= pids, (answered, pids)
    return {pid: m0test.thread_affinities(pid)["m0-pool-0"] for pid in pids}


WORKER_READY = re.compile(r"m0\[(\d+)\] info: .*listening on .*\(worker process (\d+) of \d+\)")


def worker_pids(server, workers):
    """{pid: worker index} once every worker process listens."""
    server.wait_for_log(WORKER_READY, count=workers)
    return {int(pid): int(index) for pid, index in WORKER_READY.findall(server.output())}


@pytest.mark.parametrize("colocate", ["true", "false"])
def test_a_pool_thread_runs_on_its_reactors_core_when_colocated(m0_server, colocate):
    server = m0_server(CONFIG, "--set", "executor.pool.threads=1", "--set", "executor.pool.max_threads=1",
                       "--set", f"executor.pool.colocate={colocate}")
    cpus = pool_cpus_after_a_request(server, {server.proc.pid})[server.proc.pid]
    reactor = m0test.thread_affinities(server.proc.pid)["m0-reactor-0"]
    assert cpus == (reactor if colocate == "true" else ALL_CPUS), (cpus, reactor)


def test_auto_colocates_each_worker_when_every_core_has_a_reactor(m0_server):
    # Two worker processes of one reactor each: on a machine of at most two
    # cores every core has a reactor, so `auto` puts each process's pool
    # thread on its reactor's core; on a bigger machine it leaves them free.
    server = m0_server(CONFIG, "--set", "server.workers=2", "--set", "executor.pool.threads=1",
                       "--set", "executor.pool.max_threads=1", threads=1)
    index_of = worker_pids(server, 2)
    assert len(index_of) == 2, server.output()
    cpus = pool_cpus_after_a_request(server, set(index_of))
    for pid, index in index_of.items():
        expected = {index % os.cpu_count()} if os.cpu_count() <= 2 else ALL_CPUS
        assert cpus[pid] == expected, (pid, index, cpus[pid])


def test_check_shows_what_auto_resolved_to(tmp_path):
    path = tmp_path / "m0.yaml"
    path.write_text(CONFIG)
    for workers in (1, os.cpu_count()):
        result = m0test.run_m0("--check", "--config", str(path), "--set", f"server.workers={workers}",
                               "--set", "server.threads=1")
        assert result.returncode == 0, result.stderr
        expected = "true" if workers >= os.cpu_count() else "false"
        assert f"colocate: {expected}" in result.stdout, result.stdout
