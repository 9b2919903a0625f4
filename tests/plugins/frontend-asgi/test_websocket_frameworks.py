"""The websocket scope under the frameworks users run: a Starlette
WebSocketRoute and a FastAPI websocket endpoint, with the `websockets`
client."""
import sys

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

import m0test
from conftest import asgi_config, needs_asgi
from support.websocket_client import recv, ws_connect

pytestmark = needs_asgi

# The embedded interpreter uses the test venv (sys.prefix), which has both.
VENV = f"python:\n  venv: {sys.prefix}\n"


def test_starlette_websocket_route(m0_server):
    server = m0_server(asgi_config("ws_frameworks:starlette_app", extra=VENV))
    with ws_connect(server, "/chat", subprotocols=["chat"]) as ws:
        assert ws.subprotocol == "chat"
        assert ws.response.headers["x-framework"] == "starlette"
        ws.send('{"n": 1}')
        assert recv(ws) == '{"echo":{"n":1},"path":"/chat"}'
        ws.send('{"bye": true}')
        with pytest.raises(ConnectionClosed) as closed:
            recv(ws)
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4100, "bye from starlette")
    server.wait_for_log("starlette: closed by the app")
    # A client that leaves ends the app's iter_json() loop.
    with ws_connect(server, "/chat") as ws:
        ws.send('{"n": 2}')
        recv(ws)
    server.wait_for_log("starlette: done, client state DISCONNECTED")
    assert "Traceback" not in server.output()


def test_fastapi_websocket_endpoint(m0_server):
    server = m0_server(asgi_config("ws_frameworks:fastapi_app", extra=VENV))
    with ws_connect(server, "/rooms/7?prefix=lobby") as ws:
        ws.send("hello")
        assert recv(ws) == "lobby-7: hello"
        ws.send(b"\x01\x02\x03")
        assert recv(ws) == b"\x03\x02\x01"
        ws.close(4200, "leaving")
    server.wait_for_log("fastapi: WebSocketDisconnect code=4200")
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(server, "/private")
    assert refused.value.response.status_code == 403
    # A path FastAPI has no websocket route for: it closes before accepting.
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(server, "/nowhere")
    assert refused.value.response.status_code == 403
    assert "Traceback" not in server.output()
