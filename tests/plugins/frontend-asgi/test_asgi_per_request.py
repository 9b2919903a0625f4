"""What every ASGI request gets afresh although the frontend reuses what it
can between requests (interned keys, a scope template, addresses already
seen), and send()'s awaitable used the ways apps use it."""
import json
import sys

import m0test
# The config and the skip when the Python plugins are not built, as for
# every ASGI test.
from test_asgi import asgi_config as config, pytestmark  # noqa: F401


def get(reader, sock, path, headers=""):
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode("latin-1"))
    r = reader.read()
    assert r.status == 200, r.body
    return json.loads(r.body)


def test_a_scope_defaced_by_one_request_is_whole_for_the_next(m0_server):
    server = m0_server(config("per_request_apps:scope_vandal"))
    first_conn, second_conn = server.connect(), server.connect()
    ports = [first_conn.getsockname()[1], second_conn.getsockname()[1]]
    try:
        first, second = m0test.ResponseReader(first_conn), m0test.ResponseReader(second_conn)
        seen = [get(first, first_conn, "/a", "X-One: 1\r\n"),
                get(first, first_conn, "/b"),           # same connection: same client tuple
                get(second, second_conn, "/c")]         # another connection, same client host
    finally:
        first_conn.close()
        second_conn.close()
    for s in seen:
        assert s["asgi"] == {"version": "3.0", "spec_version": "2.5"}
        assert s["extensions"] == {"http.response.pathsend": {}, "http.response.trailers": {}, "m0.request_timeout": {}}
        assert s["state"] == {}
        assert s["method"] == "GET"
        assert s["server"] == ["127.0.0.1", server.port]
    assert seen[0]["headers"] == [["host", "127.0.0.1"], ["x-one", "1"]]
    assert seen[1]["headers"] == [["host", "127.0.0.1"]]
    assert [s["path"] for s in seen] == ["/a", "/b", "/c"]
    # Each connection's own client address, port included.
    assert seen[0]["client"] == ["127.0.0.1", ports[0]] == seen[1]["client"]
    assert seen[2]["client"] == ["127.0.0.1", ports[1]]


def test_send_awaited_through_wait_for_ensure_future_and_shield(m0_server):
    server = m0_server(config("per_request_apps:send_through_helpers"))
    r = m0test.request(server.port, "GET", "/")
    assert r.status == 200
    assert r.body == b"one two three"
    assert "Traceback" not in server.output()


def test_send_run_as_a_task_and_started_with_anyio(m0_server):
    server = m0_server(config("per_request_apps:send_as_tasks") + f"python:\n  venv: {sys.prefix}\n")
    r = m0test.request(server.port, "GET", "/")
    assert r.status == 200
    assert r.body == b"task anyio " + b"x" * (8 << 20) + b"full"
    assert "Traceback" not in server.output()
