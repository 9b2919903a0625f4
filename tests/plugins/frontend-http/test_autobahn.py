"""Autobahn TestSuite conformance of the native WebSocket echo route, driven
by kosoku (the selection and the verdict: tests/support/autobahn.py). Every
case run must end OK, NON-STRICT or INFORMATIONAL."""
import os

import m0test
from support import autobahn

# The shipped echo deployment (its listen address is replaced by the harness's).
CONFIG = os.path.join(m0test.SOURCE_DIR, "configs", "websocket-echo.yaml")


def test_autobahn_fuzzingclient_cases_pass(m0_server, tmp_path):
    server = m0_server(CONFIG)
    autobahn.run_cases(f"ws://127.0.0.1:{server.port}/ws", tmp_path)
