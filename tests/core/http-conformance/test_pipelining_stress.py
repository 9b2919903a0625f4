"""Pipelining stress: thousands of requests written back to back on a few
connections (RFC 9112 9.3.2). Every response must come back, in request
order, for the right request (the reflect frontend echoes target and body).
A mix of bodiless, Content-Length and chunked requests keeps the engine's
framing honest at every request boundary, wherever the reads split them."""
import json
import threading

import pytest

from raw_client import Connection
from reflect_server import reflect_config

CONNECTIONS = 4
REQUESTS_PER_CONNECTION = 2500


def request_bytes(conn_id, seq):
    target = f"/seq/{conn_id}/{seq}"
    if seq % 5 == 1:
        body = f"body-{conn_id}-{seq}".encode()
        return (f"POST {target} HTTP/1.1\r\nHost: example.com\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body), target, body
    if seq % 5 == 3:
        body = f"chunked-{conn_id}-{seq}".encode()
        return (f"POST {target} HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
                + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)), target, body
    return f"GET {target} HTTP/1.1\r\nHost: example.com\r\n\r\n".encode(), target, b""


def run_connection(port, conn_id, errors):
    requests = [request_bytes(conn_id, seq) for seq in range(REQUESTS_PER_CONNECTION)]
    payload = b"".join(raw for raw, _, _ in requests)
    with Connection(port, timeout=30.0) as c:
        # Write everything from another thread: the server stops reading while
        # its responses back up, so writing and reading must overlap.
        writer = threading.Thread(target=c.sock.sendall, args=(payload,), daemon=True)
        writer.start()
        for seq, (_, target, body) in enumerate(requests):
            # Anything else than the expected answer is recorded: a malformed
            # response (ProtocolError) or a body that is not the reflect
            # frontend's JSON must fail the test, not end this thread quietly.
            try:
                r = c.read_response()
                doc = json.loads(r.body) if r.status == 200 else None
            except Exception as e:  # noqa: BLE001 - every way of failing is a finding
                errors.append(f"connection {conn_id}: response {seq} missing or malformed ({e!r})")
                return
            if doc is None or doc["target"] != target or doc["body"].encode("latin-1") != body:
                errors.append(f"connection {conn_id}: response {seq} is {r!r}, expected 200 for {target!r}")
                return
        writer.join(30)


def test_pipelined_requests_answered_in_order(m0_server):
    server = m0_server(reflect_config())
    errors = []
    threads = [threading.Thread(target=run_connection, args=(server.port, i, errors)) for i in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "pipelined connections did not finish within 120 s"
    assert not errors, errors
    assert server.proc.poll() is None, server.output()
