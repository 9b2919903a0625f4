"""What the metrics tests read: the metrics listener's port from m0's log,
/metrics through prometheus_client's parser, /status.json, and the
/status/stream events."""
import json
import re
import socket
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import m0test

METRICS_LINE = re.compile(r"metrics: /metrics and /status\.json on http://127\.0\.0\.1:(\d+)")


def metrics_port(server):
    return int(server.wait_for_log(METRICS_LINE).group(1))


def scrape(port, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=m0test.scaled(10)) as r:
        return r.headers.get("Content-Type"), r.read().decode()


def samples(port):
    """{(name, frozenset(labels)): value} from a scrape, through the real parser."""
    content_type, text = scrape(port)
    assert content_type.startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(found, name, **labels):
    return found[(name, frozenset(labels.items()))]


def status(port):
    return json.loads(scrape(port, "/status.json")[1])


def total_requests(snapshot):
    """Every response of a status.json snapshot, over mounts and classes."""
    return sum(sum(m["requests"].values()) for m in snapshot["mounts"])


class EventStream:
    """/status/stream read as it arrives: its head, then one event at a time."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(timeout))
        self.sock.sendall(b"GET /status/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self.buf = b""
        head = self._until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])
        self.head = head.decode("latin-1")

    def _until(self, sep):
        while sep not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("the stream ended")
            self.buf += data
        out, self.buf = self.buf.split(sep, 1)
        return out

    def event(self):
        """The next event as a dict of its fields (data lines joined);
        events without data (the retry hint) are skipped."""
        while True:
            fields = {}
            for line in self._until(b"\n\n").decode().split("\n"):
                name, _, text = line.partition(":")
                text = text[1:] if text.startswith(" ") else text
                fields[name] = fields[name] + "\n" + text if name in fields else text
            if "data" in fields:
                return fields

    def snapshot(self):
        """The next status.json snapshot the stream sends."""
        e = self.event()
        assert e.get("event", "message") == "message", e
        return json.loads(e["data"])

    def close(self):
        self.sock.close()
