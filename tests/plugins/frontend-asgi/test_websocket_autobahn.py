"""Autobahn TestSuite conformance of the websocket scope: an ASGI echo app
(apps/ws_apps.py:plain_echo) on the asyncio lane, driven by kosoku (the
selection and the verdict: tests/support/autobahn.py). Every case run must
end OK, NON-STRICT or INFORMATIONAL."""
from conftest import asgi_config, needs_asgi
from support import autobahn

pytestmark = needs_asgi

# 9.x sends messages of up to 16 MiB.
WEBSOCKET = "  websocket: {max_message_size: 20m, max_write_buffer: 20m}\n"


def test_autobahn_fuzzingclient_cases_pass_on_the_asgi_echo(m0_server, tmp_path):
    server = m0_server(asgi_config("ws_apps:plain_echo", frontend_extra=WEBSOCKET))
    summary = autobahn.assert_conformant(f"ws://127.0.0.1:{server.port}/ws", tmp_path)
    assert summary["OK"] > 0
    assert "Traceback" not in server.output()
