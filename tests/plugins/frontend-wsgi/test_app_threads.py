"""Threads an application starts get the GIL: while the server waits for the
next request (an executor thread that kept the GIL from one request to the
next gives it up before it waits for work), and while requests keep coming
back to back (CPython's switch request, and the bound on requests served
with the GIL kept)."""
import os
import shutil
import subprocess
import time

import pytest

import m0test
from conftest import wsgi_config

APP = "app_threads:app"


def started(m0_server, executor, tmp_path, ring="1", threads=1):
    args = ()
    if executor == "pool":
        args = ("--set", f"executor.pool.threads={threads}", "--set", f"executor.pool.max_threads={threads}")
    return m0_server(wsgi_config(APP, executor), *args,
                     env={"M0_TEST_OUT": str(tmp_path), "M0_POOL_RING": ring})


@pytest.mark.parametrize("ring", ["1", "0"], ids=["ring", "no ring"])
@pytest.mark.parametrize("threads", [1, 2])
def test_an_app_thread_runs_while_the_server_waits_for_requests(m0_server, executor, tmp_path, ring, threads):
    if executor == "inline" and (ring, threads) != ("1", 1):
        pytest.skip("the inline executor runs the app on the reactor")
    server = started(m0_server, executor, tmp_path, ring, threads)
    # A few requests first, so that the executor thread has served some
    # and gone idle in between.
    for _ in range(3):
        assert m0test.request(server.port).body == b"Hello, World!"
    r = m0test.request(server.port, path="/start?done")
    assert r.status == 200 and r.body == b"started"
    # No request follows: the app's thread must get the GIL from an idle
    # server (an executor thread parked with the GIL would starve it).
    done = tmp_path / "done"
    server.wait_until(done.exists, timeout=30, what="the app's thread to finish its work")
    assert done.read_text() == str(sum(range(200_000)))


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
@pytest.mark.parametrize("threads", [1, 2])
def test_an_app_thread_runs_while_requests_come_back_to_back(m0_server, executor, tmp_path, threads):
    if executor == "inline" and threads != 1:
        pytest.skip("the inline executor runs the app on the reactor")
    server = started(m0_server, executor, tmp_path, threads=threads)
    before = int(m0test.request(server.port, path="/ticks").body)
    # 64 connections keep the executor's queue full; the ticker thread must
    # still advance while they do (seen before wrk ends, or it is killed).
    wrk = subprocess.Popen(["wrk", "-t1", "-c64", "-d60s", f"http://127.0.0.1:{server.port}/"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = [before]
        deadline = time.monotonic() + m0test.scaled(30)
        while seen[-1] < before + 20 and time.monotonic() < deadline:
            seen.append(int(m0test.request(server.port, path="/ticks", timeout=30).body))
        under_load = wrk.poll() is None
    finally:
        wrk.kill()
        out = wrk.communicate()[0]
    assert under_load, out
    assert seen[-1] >= before + 20, seen
    assert server.proc.poll() is None, server.output()
