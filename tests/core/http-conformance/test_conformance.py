"""RFC 9110/9112 conformance of the HTTP/1.1 engine, table-driven (cases.py).

Every case is sent three ways on a fresh connection: whole, byte by byte,
and in random splits (seeded; the seed is in every failure message, and
M0_CONFORMANCE_SEED replays it). Accepted cases compare what the engine
handed the handler (reflected as JSON) with the expected parse, then check
the connection: closed when it must be, else still usable. Rejected cases
check the status, `Connection: close`, and that the server then closes.
"""
import json
import os
import random

import pytest

from cases import CASES
from raw_client import MODES, Connection, ProtocolError

SEED = int(os.environ.get("M0_CONFORMANCE_SEED", random.randrange(2**32)))
FOLLOW_UP = b"GET /follow-up HTTP/1.1\r\nHost: example.com\r\n\r\n"


def latin1(s):
    return s.decode("latin-1") if isinstance(s, bytes) else s


def parse_of(resp):
    doc = json.loads(resp.body)
    return {
        "method": doc["method"],
        "target": doc["target"],
        "version": doc["version"],
        "headers": [(n.lower(), v) for n, v in doc["headers"]],
        "body": doc["body"].encode("latin-1"),
    }


def expected_parse(p):
    return {
        "method": p.method,
        "target": p.target,
        "version": p.version,
        # Field names are case-insensitive (RFC 9110 5.1); values are exact.
        "headers": [(latin1(n).lower(), latin1(v)) for n, v in p.headers],
        "body": p.body,
    }


def check_reflection(resp, parsed, where):
    assert resp.status == 200, f"{where}: expected the request to be accepted, got {resp!r}"
    if parsed.method == "HEAD":
        # Nothing to compare; a body sent anyway shows up as garbage in
        # front of the follow-up response.
        return
    assert parse_of(resp) == expected_parse(parsed), f"{where}: parse differs"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case, mode, reflect_servers):
    server = reflect_servers(case.config)
    rng = random.Random(f"{SEED}:{case.name}")
    where = f"case {case.name} [{case.rfc}] sent {mode} (M0_CONFORMANCE_SEED={SEED})"
    with Connection(server.port) as conn:
        # A rejected request may be answered before it is complete: stop
        # sending then (the rest would only provoke a reset).
        conn.send(case.raw, mode, rng, stop_on_response=case.rejected and not case.requests)
        for i, parsed in enumerate(case.requests):
            try:
                resp = conn.read_response(method=parsed.method)
            except (EOFError, TimeoutError) as e:
                pytest.fail(f"{where}: no response to request {i + 1} ({e})")
            check_reflection(resp, parsed, f"{where}, request {i + 1}")
        if case.rejected:
            check_rejection(conn, case, where)
        elif case.closes is True:
            assert conn.closed_by_server(), f"{where}: connection left open, expected close"
        elif case.closes is False:
            conn.send(FOLLOW_UP)
            try:
                resp = conn.read_response()
            except (EOFError, TimeoutError) as e:
                pytest.fail(f"{where}: connection not usable after the request ({e})")
            assert resp.status == 200 and json.loads(resp.body)["target"] == "/follow-up", \
                f"{where}: follow-up request answered wrongly: {resp!r}"
    assert server.proc.poll() is None, f"m0 died on {where}:\n{server.output()}"


def check_rejection(conn, case, where):
    try:
        resp = conn.read_response(keep_interim=case.no_interim)
    except (EOFError, TimeoutError) as e:
        pytest.fail(f"{where}: expected {'/'.join(map(str, case.status))}, got no response ({e})")
    except ProtocolError as e:
        pytest.fail(f"{where}: malformed response: {e}")
    assert resp.status in case.status, \
        f"{where}: expected {'/'.join(map(str, case.status))}, got {resp.status}: {resp!r}"
    assert "close" in resp.connection_tokens(), f"{where}: error response without Connection: close: {resp!r}"
    assert conn.closed_by_server(), f"{where}: connection left open after {resp.status}"
