"""pytest setup shared by every end-to-end test: makes `m0test` importable."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402

import m0test  # noqa: E402


@pytest.fixture
def m0_server():
    """Factory fixture: m0_server(config_text_or_path, *extra_args) -> running Server.

    Every server started through it is stopped (SIGKILL as a last resort) at
    the end of the test.
    """
    started = []

    def start(config, *args, **kwargs):
        server = m0test.Server(config, *args, **kwargs)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.kill()
