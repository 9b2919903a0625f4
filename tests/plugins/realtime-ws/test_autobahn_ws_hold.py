"""Autobahn TestSuite conformance of a WebSocket hold: a synchronous WSGI
view holds the connection and its on_message(conn, message) echoes through
conn.send on the pool. The same run and case selection as the native echo
route (tests/support/autobahn.py)."""
import os

from support import autobahn

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")

# As configs/websocket-echo.yaml: 16 MiB messages (Autobahn 9.x) fit, and the
# outbox takes a 1000-message burst echoed back.
CONFIG = (
    "frontend:\n"
    "  type: wsgi\n"
    "  app: \"ws_apps:app\"\n"
    f"  chdir: {APPS}\n"
    "executor: {type: pool, pool: {threads: 4, max_threads: 4}}\n"
    "realtime:\n"
    "  outbox: {max_bytes: 64m, max_messages: 4096}\n"
    "  websocket: {max_message_size: 20m, max_write_buffer: 20m}\n"
)


def test_autobahn_fuzzingclient_cases_pass_through_on_message(m0_server, tmp_path):
    server = m0_server(CONFIG)
    autobahn.assert_conformant(f"ws://127.0.0.1:{server.port}/echo", tmp_path)
