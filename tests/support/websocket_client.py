"""A real WebSocket client (the `websockets` package, sync API) for an m0
under test: deadlines scaled for sanitizer runs, and no keepalive pings of
its own, so that what a test sees on the wire is what m0 sent."""
from websockets.sync.client import connect

import m0test


def ws_connect(server, path="/ws", port=None, **kwargs):
    """Opens ws://127.0.0.1:<port><path> on `server` (an m0test.Server), its
    first port unless `port` is given; wss:// with ssl=<an SSLContext>."""
    kwargs.setdefault("open_timeout", m0test.scaled(10))
    kwargs.setdefault("close_timeout", m0test.scaled(10))
    kwargs.setdefault("ping_interval", None)
    scheme = "wss" if kwargs.get("ssl") else "ws"
    return connect(f"{scheme}://127.0.0.1:{port or server.port}{path}", **kwargs)


def recv(ws):
    """The next message, failing the test if none comes in time."""
    return ws.recv(timeout=m0test.scaled(10))
