"""/status in a real browser: Debian's headless Chromium loads the page from
m0's metrics listener and, driven through the DevTools protocol, shows
numbers that move under load. Screenshots before and after the load are
kept in the test's temporary directory."""
import re

import pytest

import m0test
from support.browser import CHROMIUM, Browser
from metrics_support import metrics_port


NATIVE = """
frontend: {type: http, routes: [{path: /hello, body: "Hello, World!"}]}
executor: {type: inline}
metrics: {listen: "127.0.0.1:0"}
"""

def number(text):
    return int(text.replace(",", "")) if re.fullmatch(r"[\d,]+", text) else None


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup installs it)")
def test_status_page_shows_numbers_that_move_under_load(m0_server, tmp_path):
    server = m0_server(NATIVE)
    port = metrics_port(server)
    with Browser(f"http://127.0.0.1:{port}/status", tmp_path / "profile") as browser:
        # The page got its first snapshot from the stream.
        server.wait_until(lambda: browser.text("state") == "live" and number(browser.text("requests-total")) == 0,
                          timeout=60, what="the page to show a first snapshot")
        assert browser.text("workers") == "1 × 1"
        browser.screenshot(tmp_path / "status-before.png")
        for _ in range(25):
            assert m0test.request(server.port, path="/hello").status == 200
        # The stream's next snapshots reach the page: its numbers move.
        server.wait_until(lambda: number(browser.text("requests-total")) == 25, timeout=30,
                          what="the page to show 25 requests")
        server.wait_until(lambda: browser.text("rps") not in ("", "–", "0.0"), timeout=30,
                          what="a request rate on the page")
        assert re.fullmatch(r"\S+ (ms|µs|s) / \S+ (ms|µs|s) / \S+ (ms|µs|s)", browser.text("latency")), \
            browser.text("latency")
        assert "inline" in browser.text("executors")
        browser.screenshot(tmp_path / "status-after.png")
    for shot in ("status-before.png", "status-after.png"):
        with open(tmp_path / shot, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
