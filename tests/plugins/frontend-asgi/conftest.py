"""Shared by the frontend-asgi end-to-end tests: where the test apps are and
the YAML that serves one of them."""
import os

import pytest

import m0test

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(HERE, "apps")
PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")

needs_asgi = pytest.mark.skipif(
    not os.path.exists(os.path.join(PLUGINS, "m0-frontend-asgi.so")),
    reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")


def asgi_config(app, executor="asyncio", frontend_extra="", extra=""):
    """YAML serving `app` ("module:attr" in apps/)."""
    return (
        "frontend:\n"
        "  type: asgi\n"
        f"  app: \"{app}\"\n"
        f"  chdir: {APPS}\n"
        f"{frontend_extra}"
        "executor:\n"
        f"  type: {executor}\n"
        f"{extra}"
    )
