"""The Django example served through ASGI (configs/django-asgi.yaml): its
async view on the event loop, a sync template view, a POST with CSRF, and
Django's own 500 and 404."""
import importlib.util
import json
import os
import re
import sys

import pytest

import m0test

CONFIG = os.path.join(m0test.SOURCE_DIR, "configs", "django-asgi.yaml")

pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-frontend-asgi.so")),
                       reason="the Python plugins are not built"),
    pytest.mark.skipif(importlib.util.find_spec("django") is None, reason="Django is not installed in the test venv"),
]


def test_django_through_asgi(m0_server):
    server = m0_server(CONFIG, env={"VIRTUAL_ENV": sys.prefix})
    r = m0test.request(server.port, "GET", "/api/notes-async")
    assert r.status == 200, server.output()
    data = json.loads(r.body)
    assert data["async"] is True and data["count"] == 2
    r = m0test.request(server.port, "GET", "/")
    assert r.status == 200 and b"<h1>Notes</h1>" in r.body
    # CSRF round trip: the form's token and cookie, then the POST.
    r = m0test.request(server.port, "GET", "/form")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', r.body).group(1).decode()
    cookie = next(v for k, v in r.headers if k.lower() == "set-cookie" and v.startswith("csrftoken="))
    cookie = cookie.split(";", 1)[0]
    r = m0test.request(server.port, "POST", "/form", body=f"csrfmiddlewaretoken={token}&text=hi".encode(),
                       headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie,
                                "Referer": f"http://127.0.0.1:{server.port}/form"})
    assert r.status == 200 and b"you wrote: hi" in r.body
    assert m0test.request(server.port, "GET", "/boom").status == 500
    assert m0test.request(server.port, "GET", "/nope").status == 404
    assert server.stop() == 0
