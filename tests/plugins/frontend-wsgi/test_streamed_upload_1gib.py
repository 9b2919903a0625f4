"""A 1 GiB upload streamed through wsgi.input (pool executor): the app reads
it in 64 KiB pieces and answers with the byte count and a SHA-256, and m0's
resident memory grows by less than 64 MiB while it passes."""
import json
import os

import pytest

import m0test
from conftest import POOL_PLUGIN, wsgi_config

GIB = 1024 * 1024 * 1024


def test_one_gib_upload_streams_in_bounded_memory(m0_server):
    if not os.path.exists(POOL_PLUGIN):
        pytest.skip("the executor-pool plugin is not built (no m0-executor-pool.so)")
    server = m0_server(wsgi_config("upload_apps:router", "pool"), "--set", "http.max_body_size=2g", env=m0test.rss_env())
    # Warm up: the interpreter, the app and the per-thread objects exist.
    warm = m0test.request(server.port, method="POST", path="/count", body=b"x" * 200_000)
    assert warm.status == 200, (warm.body, server.output())
    before = m0test.rss_kib(server.proc.pid)

    with server.connect(timeout=60) as s:
        s.sendall(b"POST /count?mode=pieces HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % GIB)
        expected = m0test.send_numbered_mib(s, GIB)
        r = m0test.ResponseReader(s, timeout=120).read()
    after = m0test.rss_kib(server.proc.pid)

    assert r.status == 200, (r.status, r.body, server.output())
    answer = json.loads(r.body)
    assert answer["bytes"] == GIB
    assert answer["sha256"] == expected
    assert answer["content_length"] == str(GIB)
    assert after - before < 64 * 1024, (before, after)
