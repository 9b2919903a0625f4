"""The Django and Flask examples driven end to end through their configs:
GET (template, JSON), POST with CSRF, static files, 404 and 500, for both
executors."""
import json
import os
import re

import pytest

import m0test
from conftest import TEST_VENV

CONFIGS = os.path.join(m0test.SOURCE_DIR, "configs")
DJANGO_CSS = os.path.join(m0test.SOURCE_DIR, "examples", "django", "notes", "static", "notes", "site.css")


@pytest.fixture
def site(m0_server, executor):
    def start(name):
        return m0_server(os.path.join(CONFIGS, f"{name}.yaml"), "--set", f"executor.type={executor}",
                         env={"VIRTUAL_ENV": TEST_VENV})
    return start


cookies_of, cookie_header = m0test.cookies_of, m0test.cookie_header


def form_post(server, path, fields, jar, referer):
    body = "&".join(f"{k}={v}" for k, v in fields.items()).encode()
    return m0test.request(server.port, method="POST", path=path, body=body, headers={
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": cookie_header(jar),
        "Referer": referer,
    })



def test_django_pages(site):
    server = site("django")
    r = m0test.request(server.port, path="/")
    assert r.status == 200, server.output()
    assert b"<h1>Notes</h1>" in r.body and b"/static/notes/site.css" in r.body
    r = m0test.request(server.port, path="/api/notes")
    assert r.status == 200 and r.header("Content-Type") == "application/json"
    assert json.loads(r.body)["count"] == 2


def test_django_static_served_natively(site):
    server = site("django")
    r = m0test.request(server.port, path="/static/notes/site.css")
    assert r.status == 200 and b"font-family" in r.body
    assert r.header("Content-Type").startswith("text/css")
    assert m0test.request(server.port, path="/static/notes/nope.css").status == 404


def test_django_static_revalidates_with_etag_and_date(site):
    server = site("django")
    first = m0test.request(server.port, path="/static/notes/site.css")
    etag, last_modified = first.header("ETag"), first.header("Last-Modified")
    assert first.status == 200 and etag and last_modified
    r = m0test.request(server.port, path="/static/notes/site.css", headers={"If-None-Match": etag})
    assert r.status == 304 and r.body == b"" and r.header("ETag") == etag
    r = m0test.request(server.port, path="/static/notes/site.css", headers={"If-Modified-Since": last_modified})
    assert r.status == 304 and r.body == b""
    r = m0test.request(server.port, path="/static/notes/site.css", headers={"If-None-Match": '"other"'})
    assert r.status == 200 and r.body == first.body


def test_django_static_answers_byte_ranges(site):
    server = site("django")
    with open(DJANGO_CSS, "rb") as f:
        data = f.read()
    r = m0test.request(server.port, path="/static/notes/site.css", headers={"Range": "bytes=0-9"})
    assert r.status == 206 and r.body == data[:10]
    assert r.header("Content-Range") == f"bytes 0-9/{len(data)}"
    assert r.header("Accept-Ranges") == "bytes"
    r = m0test.request(server.port, path="/static/notes/site.css", headers={"Range": "bytes=-5"})
    assert r.status == 206 and r.body == data[-5:]
    r = m0test.request(server.port, path="/static/notes/site.css", headers={"Range": f"bytes={len(data)}-"})
    assert r.status == 416 and r.header("Content-Range") == f"bytes */{len(data)}"
    # A stale If-Range validator gets the whole file instead of a piece of a newer one.
    r = m0test.request(server.port, path="/static/notes/site.css",
                       headers={"Range": "bytes=0-9", "If-Range": '"stale"'})
    assert r.status == 200 and r.body == data


def test_django_form_post_with_csrf(site):
    server = site("django")
    r = m0test.request(server.port, path="/form")
    assert r.status == 200
    jar = cookies_of(r)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', r.body).group(1).decode()
    assert "csrftoken" in jar
    ok = form_post(server, "/form", {"csrfmiddlewaretoken": token, "text": "hello+m0"}, jar,
                   "http://127.0.0.1/form")
    assert ok.status == 200, ok.body
    assert b"Thanks, you wrote: hello m0" in ok.body
    # Without the token: Django's CSRF check refuses it.
    bad = form_post(server, "/form", {"text": "no-token"}, jar, "http://127.0.0.1/form")
    assert bad.status == 403


def test_django_404_and_500(site):
    server = site("django")
    assert m0test.request(server.port, path="/no/such/page").status == 404
    r = m0test.request(server.port, path="/boom")
    assert r.status == 500
    server.wait_for_log("the example's deliberate error")
    assert m0test.request(server.port, path="/").status == 200


def test_flask_pages_and_static(site):
    server = site("flask")
    r = m0test.request(server.port, path="/")
    assert r.status == 200 and b"<h1>Notes</h1>" in r.body, server.output()
    r = m0test.request(server.port, path="/api/notes")
    assert r.status == 200 and json.loads(r.body)["count"] == 2
    # Flask's static route answers with wsgi.file_wrapper over a real file.
    r = m0test.request(server.port, path="/static/site.css")
    assert r.status == 200 and b"font-family" in r.body
    with open(os.path.join(m0test.SOURCE_DIR, "examples", "flask", "static", "site.css"), "rb") as f:
        assert r.body == f.read()


def test_flask_form_post_with_csrf(site):
    server = site("flask")
    r = m0test.request(server.port, path="/form")
    jar = cookies_of(r)
    token = re.search(rb'name="csrf_token" value="([^"]+)"', r.body).group(1).decode()
    ok = form_post(server, "/form", {"csrf_token": token, "text": "hi+flask"}, jar, "http://127.0.0.1/form")
    assert ok.status == 200 and b"Thanks, you wrote: hi flask" in ok.body
    bad = form_post(server, "/form", {"csrf_token": "forged", "text": "x"}, jar, "http://127.0.0.1/form")
    assert bad.status == 403


def test_flask_404_and_500(site):
    server = site("flask")
    assert m0test.request(server.port, path="/missing").status == 404
    assert m0test.request(server.port, path="/boom").status == 500
    server.wait_for_log("the example's deliberate error")
    assert m0test.request(server.port, path="/api/notes").status == 200
