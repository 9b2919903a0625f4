"""The FastAPI example (examples/fastapi) driven end to end through
configs/fastapi.yaml: the lifespan store, JSON routes, streaming, an upload,
a background task. Skipped where the test venv has no FastAPI."""
import hashlib
import importlib.util
import json
import os
import sys
import time

import pytest

import m0test

CONFIG = os.path.join(m0test.SOURCE_DIR, "configs", "fastapi.yaml")

pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-frontend-asgi.so")),
                       reason="the Python plugins are not built"),
    pytest.mark.skipif(importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("multipart") is None,
                       reason="fastapi / python-multipart are not installed in the test venv"),
]


def json_request(server, method, path, body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    data = json.dumps(body).encode() if body is not None else b""
    r = m0test.request(server.port, method, path, headers=headers, body=data)
    return r.status, json.loads(r.body) if r.body else None


def test_fastapi_example(m0_server):
    server = m0_server(CONFIG, env={"VIRTUAL_ENV": sys.prefix})
    assert json_request(server, "GET", "/") == (200, {"service": "notes", "store_open": True, "notes": 0})
    assert json_request(server, "POST", "/notes", {"text": "first"}) == (201, {"id": 1, "text": "first"})
    assert json_request(server, "POST", "/notes", {"text": "second"}) == (201, {"id": 2, "text": "second"})
    assert json_request(server, "GET", "/notes") == (200, {"notes": ["first", "second"]})
    status, err = json_request(server, "POST", "/notes", {"wrong": 1})
    assert status == 422 and err["detail"]
    # The background task ran after its response was sent.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if sorted(json_request(server, "GET", "/events")[1]["events"]) == ["added first", "added second"]:
            break
        time.sleep(0.05)
    # Each ran once; two requests' tasks may finish in either order.
    assert sorted(json_request(server, "GET", "/events")[1]["events"]) == ["added first", "added second"]

    r = m0test.request(server.port, "GET", "/count?to=50")
    assert r.header("Transfer-Encoding") == "chunked"
    assert r.body == "".join(f"{i}\n" for i in range(1, 51)).encode()

    payload = bytes(range(256)) * 400
    boundary = "m0boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"blob.bin\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + payload + f"\r\n--{boundary}--\r\n".encode()
    r = m0test.request(server.port, "POST", "/upload", body=body,
                       headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status == 200, r.body
    assert json.loads(r.body) == {"name": "blob.bin", "size": len(payload),
                                  "sha256": hashlib.sha256(payload).hexdigest()}
    assert m0test.request(server.port, "GET", "/nope").status == 404
    assert server.stop() == 0
    assert "fastapi example: store closed" in server.output()
