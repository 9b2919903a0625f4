"""Metrics a plugin reports (serving_hooks::report_metrics): the realtime
module's holds and messages as m0_realtime_* series in /metrics (through
prometheus_client's parser) and in /status.json's "plugins"."""
import os
import socket
import struct
import sys

import m0test
from metrics_support import metrics_port, samples, status, value

HOLD_APPS = os.path.join(m0test.SOURCE_DIR, "tests", "plugins", "realtime-ws", "apps")

CONFIG = f"""
frontend: {{type: wsgi, app: "hold_apps:app", chdir: {HOLD_APPS}}}
executor: {{type: pool, pool: {{threads: 2}}}}
realtime: {{}}
metrics: {{listen: "127.0.0.1:0"}}
"""


def test_realtime_holds_and_deliveries(m0_server):
    server = m0_server(CONFIG, env={"VIRTUAL_ENV": sys.prefix})
    port = metrics_port(server)
    # The sampler reports the module's series a moment after the start.
    server.wait_until(lambda: ("m0_realtime_holds_open", frozenset()) in samples(port),
                      what="the realtime series in /metrics")
    found = samples(port)
    assert value(found, "m0_realtime_holds_open") == 0
    assert value(found, "m0_realtime_messages_delivered_total") == 0

    hold = server.open_request("/hold?channels=news&tag=a")
    try:
        server.wait_for_log("held a")
        server.wait_until(lambda: value(samples(port), "m0_realtime_holds_open") == 1, what="one hold open")
        assert m0test.request(server.port, "POST", "/publish?channel=news", body=b"hello").status == 204
        received = b""
        while b"data: hello" not in received:
            received += hold.recv(65536)
        server.wait_until(lambda: value(samples(port), "m0_realtime_messages_delivered_total") == 1,
                          what="one message delivered")
        found = samples(port)
        assert value(found, "m0_realtime_holds_total") == 1
        assert value(found, "m0_realtime_messages_dropped_total") == 0
        # The memory bus took the publish and brought it back, nothing lost.
        assert value(found, "m0_realtime_bus_published_total") == 1
        assert value(found, "m0_realtime_bus_delivered_total") == 1
        assert value(found, "m0_realtime_bus_lost_total") == 0
        plugins = {p["name"]: p for p in status(port)["plugins"]}
        assert plugins["m0_realtime_holds_open"] == {"name": "m0_realtime_holds_open", "type": "gauge",
                                                     "labels": {}, "value": 1}
        assert plugins["m0_realtime_messages_delivered_total"]["type"] == "counter"
    finally:
        # A reset: m0 sees the client gone at once and ends the hold.
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        hold.close()
    server.wait_until(lambda: value(samples(port), "m0_realtime_holds_open") == 0, what="no hold open")
    assert value(samples(port), "m0_realtime_holds_total") == 1
