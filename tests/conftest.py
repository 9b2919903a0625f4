"""pytest setup shared by every end-to-end test: makes `m0test` importable and
makes an exception in a background thread fail the test that started it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402

import m0test  # noqa: E402


def pytest_configure(config):
    # pytest reports an exception raised in a thread as a warning, so a client
    # thread that dies on a malformed response would leave its test passing.
    # As an error it fails the test during which the thread ended; tests join
    # their threads before returning so that this is their own test.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestUnhandledThreadExceptionWarning")


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
