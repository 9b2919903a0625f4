"""A headless Chromium driven through the DevTools protocol, for tests that
need a real browser: it shows a page, and a test reads what the page shows
as it changes."""
import base64
import contextlib
import json
import os
import re
import select
import shutil
import subprocess
import threading
import time
import urllib.request

from websockets.sync.client import connect

import m0test

CHROMIUM = shutil.which("chromium")

DEVTOOLS = re.compile(rb"DevTools listening on (ws://\S+)")


class Browser(contextlib.ExitStack):
    """A headless Chromium showing `url`, and its page's DevTools session;
    a context manager that ends both."""

    def __init__(self, url, profile, extra_args=()):
        super().__init__()
        self.url, self.profile, self.extra_args = url, profile, list(extra_args)
        self.next_id = 0

    def __enter__(self):
        super().__enter__()
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self):
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "--window-size=1280,1000", *self.extra_args, self.url],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self.callback(self._kill)
        err = b""
        deadline = time.monotonic() + m0test.scaled(60)
        while not DEVTOOLS.search(err):
            if not select.select([self.proc.stderr], [], [], max(0, deadline - time.monotonic()))[0]:
                raise RuntimeError(f"chromium did not open its DevTools endpoint in time:\n{err.decode()}")
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError(f"chromium exited before its DevTools endpoint was up:\n{err.decode()}")
            err += line
        # What chromium logs from now on is not read: drained so that it never blocks on a full pipe.
        drain = threading.Thread(target=self.proc.stderr.read, daemon=True)
        drain.start()
        endpoint = DEVTOOLS.search(err).group(1).decode()
        port = int(endpoint.split(":")[2].split("/")[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=m0test.scaled(30)) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.ws = self.enter_context(connect(page["webSocketDebuggerUrl"], max_size=None,
                                             open_timeout=m0test.scaled(30)))

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:  # events (no subscriptions here) are skipped
            reply = json.loads(self.ws.recv(timeout=m0test.scaled(30)))
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply
                return reply["result"]

    def text(self, element_id):
        """The text the page shows in the element with that id."""
        result = self.call("Runtime.evaluate", returnByValue=True,
                           expression=f"(document.getElementById({element_id!r}) || {{}}).textContent || ''")
        return result["result"]["value"]

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def _kill(self):
        os.killpg(self.proc.pid, 9)
        self.proc.wait(timeout=30)

