"""Shared servers for the conformance table: m0 serving the `reflect`
frontend with the engine's default limits or with small ones (and HTTP/2
off: its preface is then a malformed HTTP/1.1 request)."""
import pytest

import m0test
from reflect_server import reflect_config

# `header_timeout` is raised so that a case the engine wrongly waits on fails
# on the client's own (shorter) deadline, not with a 408.
LIMITS = {
    "default": {"header_timeout": "30s"},
    "small": {"max_request_line": 256, "max_header_size": 256, "max_header_count": 16,
              "max_header_bytes": 1024, "max_body_size": 64, "header_timeout": "30s"},
}


@pytest.fixture(scope="session")
def reflect_servers():
    """name → running Server; each is started on first use, stopped at the end."""
    servers = {}

    def get(name):
        if name not in servers:
            http2 = {"enabled": "false"} if name == "small" else None
            servers[name] = m0test.Server(reflect_config(LIMITS[name], http2)).start()
        server = servers[name]
        assert server.proc.poll() is None, f"m0 ({name}) died:\n{server.output()}"
        return server

    yield get
    m0test.finish_servers(servers.values())
