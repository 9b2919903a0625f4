"""Fixtures of the frontend-wsgi end-to-end tests: every test runs once per
executor, and only the YAML differs between the runs."""
import os
import sys

import pytest

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(HERE, "apps")
POOL_PLUGIN = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-executor-pool.so")
# The test venv carries Django and Flask; the embedded interpreter uses it.
TEST_VENV = sys.prefix


@pytest.fixture(params=["inline", "pool"])
def executor(request):
    if request.param == "pool" and not os.path.exists(POOL_PLUGIN):
        pytest.skip("the executor-pool plugin is not built (no m0-executor-pool.so)")
    return request.param


def wsgi_config(app, executor, extra=""):
    """YAML for the test apps: `app` is "module:callable" in apps/."""
    return (
        "frontend:\n"
        "  type: wsgi\n"
        f"  app: \"{app}\"\n"
        f"  chdir: {APPS}\n"
        f"{extra}"
        "executor:\n"
        f"  type: {executor}\n"
    )


@pytest.fixture
def wsgi_server(m0_server, executor):
    """wsgi_server(app="wsgi_apps:validated", extra=frontend-yaml-lines) -> Server."""
    def start(app="wsgi_apps:validated", extra="", *args, **kwargs):
        if executor == "pool":
            # Two app threads, so that a test can ask about a request that
            # holds one (a stream waiting for its client).
            args = ("--set", "executor.pool.threads=2", "--set", "executor.pool.max_threads=2") + args
        return m0_server(wsgi_config(app, executor, extra), *args, **kwargs)
    return start
