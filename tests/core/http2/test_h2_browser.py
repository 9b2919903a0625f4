"""A real browser (headless Chromium, driven through DevTools) over HTTPS: the page comes over HTTP/2
(ALPN), and its WebSocket opens on an HTTP/2 stream when m0 announces
RFC 8441 (`http2.websocket: true`), over HTTP/1.1 when it does not. The
access log says which; the page shows the echo either way."""
import pytest

from support.browser import CHROMIUM, Browser
from support.tls import Certificates

PAGE = """<html><body><div id="out">pending</div><script>
const ws = new WebSocket(`wss://${location.host}/ws`);
ws.onopen = () => ws.send("hi from the browser");
ws.onmessage = (e) => { document.getElementById("out").textContent = "got:" + e.data; ws.close(); };
ws.onerror = () => { document.getElementById("out").textContent = "error"; };
</script></body></html>
"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup installs it)")
@pytest.mark.parametrize("websocket_over_h2", [True, False])
def test_browser_websocket_over_h2_or_http1(m0_server, tmp_path, websocket_over_h2):
    certs = Certificates(str(tmp_path))
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_text(PAGE)
    config = (
        "frontend:\n  type: http\n  static: {prefix: /, root: " + str(site) + "}\n"
        "  routes:\n    - {path: /ws, websocket: {handler: echo}}\n"
        "log:\n  access: true\n"
        f"http2:\n  websocket: {'true' if websocket_over_h2 else 'false'}\n"
    )
    server = m0_server(config, *certs.m0_args())
    tls_port = server.ports[1]
    with Browser(f"https://127.0.0.1:{tls_port}/page.html", tmp_path / "profile",
                 extra_args=["--ignore-certificate-errors"]) as browser:
        # "" until the page is there, "pending" until its WebSocket answers.
        server.wait_until(lambda: browser.text("out") not in ("", "pending"), timeout=60,
                          what="the page's WebSocket echo")
        assert browser.text("out") == "got:hi from the browser", server.output()
    server.wait_for_log(r'"GET /page.html HTTP/2" 200')
    if websocket_over_h2:
        server.wait_for_log(r'"GET /ws HTTP/2" 200')
    else:
        server.wait_for_log(r'"GET /ws HTTP/1.1" 101')
