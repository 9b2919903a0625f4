"""Granian's test suite served by m0: this file replaces the suite's own
tests/conftest.py (which starts Granian) once test_granian_suite.py has
unpacked it, and gives its tests the same fixtures.

Each factory (`asgi_server`, `wsgi_server`, `server`) returns an async
context manager that starts `m0 --app tests.apps.<interface>:app
--interface <interface>` from the unpacked suite's root (its apps read files
relative to the working directory), yields the port m0 listens on once its
log says so, and at the end stops m0 with SIGTERM and waits for it: a stop
that is not clean (exit code other than 0, a sanitizer report) fails the
test. Granian-only arguments (runtime_mode, ws, task_impl, tls...) are
accepted and ignored.
"""
import contextlib
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.environ["M0_SOURCE_DIR"], "tests"))
import m0test  # noqa: E402

# The unpacked suite's root: this file is its tests/conftest.py.
SUITE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.asynccontextmanager
async def _m0(interface, port, *granian_args, **granian_kwargs):
    # `port` is 0: m0 binds a port of its own and the harness reads it from
    # the log (see server_port).
    server = m0test.Server(None, "--app", f"tests.apps.{interface}:app", "--interface", interface,
                           "--venv", sys.prefix, cwd=SUITE_ROOT)
    try:
        server.start()
        yield server.port
        code = server.stop()
    finally:
        m0test.finish_servers([server])
    assert code == 0, f"m0 exited with {code} after SIGTERM:\n{server.output()}"


@pytest.fixture
def server_port():
    # Granian's fixture picks a free port and releases it before the server
    # binds it, which a test running in parallel can take in between; m0
    # listens on port 0 instead and the factories yield the port it bound.
    return 0


@pytest.fixture
def asgi_server(server_port):
    return lambda *args, **kwargs: _m0("asgi", server_port, *args, **kwargs)


@pytest.fixture
def wsgi_server(server_port):
    return lambda *args, **kwargs: _m0("wsgi", server_port, *args, **kwargs)


@pytest.fixture
def server(server_port, request):
    return lambda *args, **kwargs: _m0(request.param, server_port, *args, **kwargs)
