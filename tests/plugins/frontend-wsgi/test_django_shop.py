"""The Django example's database pages under m0, on SQLite (the default) and
on PostgreSQL (a temporary server, examples/django/temp_postgres.py): the
page's three queries, template, signed-cookie session and CSRF form, the
JSON list of 20 rows (also as an async view, through ASGI on the asyncio
executor), and on PostgreSQL the connections m0's default shape holds:
persistent, at most one per pool thread."""
import json
import os
import re
import sys

import pytest

import m0test
from conftest import TEST_VENV

EXAMPLE = os.path.join(m0test.SOURCE_DIR, "examples", "django")
CONFIG = os.path.join(m0test.SOURCE_DIR, "configs", "django.yaml")
ASGI_CONFIG = os.path.join(m0test.SOURCE_DIR, "configs", "django-asgi.yaml")
sys.path.insert(0, EXAMPLE)
import temp_postgres  # noqa: E402

VENV_PYTHON = os.path.join(TEST_VENV, "bin", "python")


@pytest.fixture(scope="module")
def postgres():
    with temp_postgres.TempPostgres(max_connections=20) as pg:
        temp_postgres.migrate(VENV_PYTHON, pg.env())
        yield pg


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """(the settings' environment, the PostgreSQL server or None)."""
    if request.param == "sqlite":
        env = {"DJANGO_SQLITE": str(tmp_path / "db.sqlite3")}
        temp_postgres.migrate(VENV_PYTHON, env)
        return env, None
    pg = request.getfixturevalue("postgres")
    return pg.env(), pg


def test_the_shop_page_its_session_and_form(m0_server, database):
    env, _ = database
    server = m0_server(CONFIG, env=dict(env, VIRTUAL_ENV=TEST_VENV))
    r = m0test.request(server.port, path="/shop/")
    assert r.status == 200, server.output()
    assert b"200 products, 53.70 on average. Visit 1; 0 in your basket." in r.body, r.body
    assert b"<li>Books (25)</li>" in r.body and b"Toys item 200" in r.body
    jar = m0test.cookies_of(r)
    assert "sessionid" in jar and "csrftoken" in jar, r.headers
    # The session comes back in its signed cookie.
    r = m0test.request(server.port, path="/shop/", headers={"Cookie": m0test.cookie_header(jar)})
    assert b"Visit 2;" in r.body
    jar.update(m0test.cookies_of(r))
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', r.body).group(1).decode()
    form = {"Content-Type": "application/x-www-form-urlencoded", "Referer": "http://127.0.0.1/shop/",
            "Cookie": m0test.cookie_header(jar)}
    r = m0test.request(server.port, method="POST", path="/shop/", headers=form,
                       body=f"csrfmiddlewaretoken={token}&product=7".encode())
    assert r.status == 302 and r.header("Location") == "/shop/", (r.status, r.body)
    jar.update(m0test.cookies_of(r))
    r = m0test.request(server.port, path="/shop/", headers={"Cookie": m0test.cookie_header(jar)})
    assert b"1 in your basket." in r.body
    # Without the token: refused by Django's CSRF check.
    r = m0test.request(server.port, method="POST", path="/shop/", headers=form, body=b"product=7")
    assert r.status == 403


def test_the_json_list_of_20_rows(m0_server, database):
    env, _ = database
    server = m0_server(CONFIG, env=dict(env, VIRTUAL_ENV=TEST_VENV))
    r = m0test.request(server.port, path="/shop/api/products")
    assert r.status == 200 and r.header("Content-Type") == "application/json", server.output()
    rows = json.loads(r.body)["products"]
    assert len(rows) == 20
    assert rows[0] == {"id": 1, "name": "Books item 1", "price": "10.00", "stock": 0, "category": "Books"}


@pytest.mark.skipif(not os.path.exists(os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-frontend-asgi.so")),
                    reason="the ASGI plugin is not built")
def test_the_async_json_list_answers_as_the_sync_one(m0_server, database):
    """/shop/api/products-async (Django's async ORM, on m0's event loop
    through ASGI) gives the rows /shop/api/products gives."""
    env, _ = database
    server = m0_server(ASGI_CONFIG, env=dict(env, VIRTUAL_ENV=TEST_VENV))
    sync = m0test.request(server.port, path="/shop/api/products")
    assert sync.status == 200, server.output()
    r = m0test.request(server.port, path="/shop/api/products-async")
    assert r.status == 200 and r.header("Content-Type") == "application/json", server.output()
    assert json.loads(r.body) == json.loads(sync.body)
    assert len(json.loads(r.body)["products"]) == 20


def test_default_workers_keep_one_connection_per_pool_thread(m0_server, postgres):
    """`--workers 2` with every other default: two processes, one pool thread
    each while requests come one at a time (the pool grows only while jobs
    wait), so two persistent connections, however many requests."""
    # libpq names the connections, so those of other tests' servers (which
    # may still be closing) are not counted.
    env = dict(postgres.env(), VIRTUAL_ENV=TEST_VENV, PGAPPNAME="m0-default-workers")
    server = m0_server(CONFIG, "--workers", "2", threads=None, env=env)
    for _ in range(20):
        assert m0test.request(server.port, path="/shop/api/products").status == 200
    count = postgres.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'm0-default-workers'")
    assert 1 <= int(count) <= 2, count
