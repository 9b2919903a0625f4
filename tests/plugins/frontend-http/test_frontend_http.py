"""End-to-end tests of the `http` frontend: fixed routes and static files,
over real sockets against a started m0."""
import os
import shutil
import signal
import socket

import pytest

import m0test
from m0test import ResponseReader, request, run_m0

SITE = os.path.join(m0test.SOURCE_DIR, "examples", "static-site")
HELLO_CONFIG = os.path.join(m0test.SOURCE_DIR, "configs", "hello.yaml")
STATIC_CONFIG = os.path.join(m0test.SOURCE_DIR, "configs", "static.yaml")


def site_bytes(rel):
    with open(os.path.join(SITE, rel), "rb") as f:
        return f.read()


def raw_request(method, path, headers=None, version="HTTP/1.1"):
    hdrs = {"Host": "127.0.0.1"}
    hdrs.update(headers or {})
    head = f"{method} {path} {version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    return head.encode("latin-1")


def config_with(routes="", static=""):
    return "frontend:\n  type: http\n" + routes + static


@pytest.fixture
def static_server(m0_server):
    return m0_server(STATIC_CONFIG)


# --- static files -----------------------------------------------------------

@pytest.mark.parametrize("path,rel,content_type", [
    ("/index.html", "index.html", "text/html"),
    ("/css/site.css", "css/site.css", "text/css"),
    ("/img/logo.png", "img/logo.png", "image/png"),
    ("/notes.txt", "notes.txt", "text/plain"),
    ("/docs/index.html", "docs/index.html", "text/html"),
])
def test_static_bytes_are_the_file(static_server, path, rel, content_type):
    r = request(static_server.port, "GET", path)
    assert r.status == 200
    assert r.body == site_bytes(rel)
    assert r.header("Content-Type").split(";")[0] == content_type
    assert int(r.header("Content-Length")) == len(site_bytes(rel))
    assert r.header("ETag")
    assert r.header("Last-Modified").endswith(" GMT")


def test_directory_serves_its_index(static_server):
    r = request(static_server.port, "GET", "/")
    assert r.status == 200
    assert r.body == site_bytes("index.html")
    r = request(static_server.port, "GET", "/docs/")
    assert r.status == 200
    assert r.body == site_bytes("docs/index.html")


def test_directory_without_slash_redirects(static_server):
    r = request(static_server.port, "GET", "/docs?x=1")
    assert r.status == 301
    assert r.header("Location") == "/docs/?x=1"


def test_missing_file_is_404_and_post_is_405(static_server):
    assert request(static_server.port, "GET", "/nope.html").status == 404
    r = request(static_server.port, "POST", "/index.html", body=b"x")
    assert r.status == 405
    assert "GET" in r.header("Allow")


def test_matching_etag_gives_304(static_server):
    first = request(static_server.port, "GET", "/css/site.css")
    etag = first.header("ETag")
    r = request(static_server.port, "GET", "/css/site.css", headers={"If-None-Match": etag})
    assert r.status == 304
    assert r.body == b""
    assert r.header("ETag") == etag
    r = request(static_server.port, "GET", "/css/site.css", headers={"If-None-Match": f'"other", W/{etag}'})
    assert r.status == 304
    r = request(static_server.port, "GET", "/css/site.css", headers={"If-None-Match": '"other"'})
    assert r.status == 200
    assert r.body == site_bytes("css/site.css")


def test_if_modified_since_gives_304(static_server):
    first = request(static_server.port, "GET", "/notes.txt")
    last_modified = first.header("Last-Modified")
    r = request(static_server.port, "GET", "/notes.txt", headers={"If-Modified-Since": last_modified})
    assert r.status == 304
    assert r.body == b""
    r = request(static_server.port, "GET", "/notes.txt",
                headers={"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"})
    assert r.status == 200
    assert r.body == site_bytes("notes.txt")


@pytest.mark.parametrize("spec,start,stop", [
    ("bytes=0-9", 0, 10),
    ("bytes=10-", 10, None),
    ("bytes=-7", -7, None),
])
def test_range_gives_206(static_server, spec, start, stop):
    data = site_bytes("img/logo.png")
    r = request(static_server.port, "GET", "/img/logo.png", headers={"Range": spec})
    assert r.status == 206
    expected = data[start:stop]
    assert r.body == expected
    first = start % len(data)
    assert r.header("Content-Range") == f"bytes {first}-{first + len(expected) - 1}/{len(data)}"
    assert int(r.header("Content-Length")) == len(expected)


def test_unsatisfiable_range_gives_416(static_server):
    size = len(site_bytes("notes.txt"))
    r = request(static_server.port, "GET", "/notes.txt", headers={"Range": f"bytes={size}-"})
    assert r.status == 416
    assert r.header("Content-Range") == f"bytes */{size}"


def test_multi_range_is_ignored(static_server):
    r = request(static_server.port, "GET", "/notes.txt", headers={"Range": "bytes=0-1,4-5"})
    assert r.status == 200
    assert r.body == site_bytes("notes.txt")


def test_if_range_with_an_old_etag_sends_everything(static_server):
    r = request(static_server.port, "GET", "/notes.txt", headers={"Range": "bytes=0-1", "If-Range": '"stale"'})
    assert r.status == 200
    assert r.body == site_bytes("notes.txt")


def test_head_has_length_but_no_body(static_server):
    size = len(site_bytes("notes.txt"))
    with static_server.connect() as s:
        reader = ResponseReader(s)
        s.sendall(raw_request("HEAD", "/notes.txt"))
        r = reader.read(head_only=True)
        assert r.status == 200
        assert int(r.header("Content-Length")) == size
        # Were any body bytes sent, they would be read as the next status line.
        s.sendall(raw_request("HEAD", "/health"))
        r = reader.read(head_only=True)
        assert r.status == 200
        assert int(r.header("Content-Length")) == 2
        s.sendall(raw_request("GET", "/health", {"Connection": "close"}))
        r = reader.read()
        assert r.body == b"ok"
        assert reader.buf == b""


def test_if_none_match_is_used_instead_of_if_modified_since(static_server):
    # RFC 9110 13.2.2, and the README: If-Modified-Since counts only when
    # If-None-Match is absent.
    first = request(static_server.port, "GET", "/notes.txt")
    etag, last_modified = first.header("ETag"), first.header("Last-Modified")
    r = request(static_server.port, "GET", "/notes.txt",
                headers={"If-None-Match": '"other"', "If-Modified-Since": last_modified})
    assert r.status == 200 and r.body == site_bytes("notes.txt")
    r = request(static_server.port, "GET", "/notes.txt",
                headers={"If-None-Match": etag, "If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"})
    assert r.status == 304


# --- routing ----------------------------------------------------------------

def test_the_longest_static_prefix_wins_whatever_the_order(m0_server, tmp_path):
    (tmp_path / "top" / "assets").mkdir(parents=True)
    (tmp_path / "top" / "assets" / "x.txt").write_text("from the / mount")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "x.txt").write_text("from the /assets/ mount")
    server = m0_server(config_with(static=(
        f"  static:\n"
        f"    - {{prefix: /, root: '{tmp_path / 'top'}'}}\n"
        f"    - {{prefix: /assets/, root: '{tmp_path / 'assets'}'}}\n")))
    assert request(server.port, "GET", "/assets/x.txt").body == b"from the /assets/ mount"
    assert request(server.port, "GET", "/assets/../assets/x.txt").status == 404


@pytest.mark.parametrize("first,second,exact_answer", [
    ("{path: /api/*, body: prefix}", "{path: /api/exact, body: exact}", b"prefix"),
    ("{path: /api/exact, body: exact}", "{path: /api/*, body: prefix}", b"exact"),
])
def test_the_first_matching_route_wins(m0_server, first, second, exact_answer):
    server = m0_server(config_with(routes=f"  routes:\n    - {first}\n    - {second}\n"))
    assert request(server.port, "GET", "/api/exact").body == exact_answer
    assert request(server.port, "GET", "/api/other").body == b"prefix"


def test_an_empty_index_disables_directory_answers(m0_server):
    server = m0_server(config_with(static=f"  static: {{prefix: /, root: '{SITE}', index: ''}}\n"))
    assert request(server.port, "GET", "/").status == 404
    assert request(server.port, "GET", "/docs/").status == 404
    assert request(server.port, "GET", "/docs/index.html").body == site_bytes("docs/index.html")


# --- traversal ----------------------------------------------------------------

@pytest.fixture
def site_copy(tmp_path):
    """A copy of the site with a secret next to it and a symlink out of it."""
    root = tmp_path / "site"
    shutil.copytree(SITE, root)
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOP-SECRET-BYTES\n")
    (root / "leak.txt").symlink_to(secret)
    (root / "up").symlink_to(tmp_path, target_is_directory=True)
    (root / "inside.txt").symlink_to("notes.txt")
    return root


@pytest.mark.parametrize("path", [
    "/../secret.txt",
    "/%2e%2e/secret.txt",
    "/%2E%2E/%2e%2e/secret.txt",
    "/..%2fsecret.txt",
    "/docs/..%2f..%2fsecret.txt",
    "/docs%2f..%2f..%2fsecret.txt",
    "/docs/../../secret.txt",
    "/leak.txt",
    "/up/secret.txt",
    "/%00/secret.txt",
])
def test_no_escape_from_the_root(m0_server, site_copy, path):
    server = m0_server(config_with(static=f"  static: {{prefix: /, root: '{site_copy}'}}\n"))
    r = request(server.port, "GET", path)
    assert r.status == 404
    assert b"TOP-SECRET" not in r.body


def test_fifo_in_the_root_is_404_not_a_hang(m0_server, site_copy):
    os.mkfifo(site_copy / "pipe")
    server = m0_server(config_with(
        routes="  routes:\n    - {path: /health, body: ok}\n",
        static=f"  static: {{prefix: /, root: '{site_copy}'}}\n"))
    assert request(server.port, "GET", "/pipe").status == 404
    # The reactor is still free.
    assert request(server.port, "GET", "/health").body == b"ok"


def test_encoded_slash_is_refused(m0_server, site_copy):
    server = m0_server(config_with(static=f"  static: {{prefix: /, root: '{site_copy}'}}\n"))
    assert request(server.port, "GET", "/docs%2findex.html").status == 404
    assert request(server.port, "GET", "/docs/index.html").status == 200


def test_symlink_inside_the_root_is_served(m0_server, site_copy):
    server = m0_server(config_with(static=f"  static: {{prefix: /, root: '{site_copy}'}}\n"))
    r = request(server.port, "GET", "/inside.txt")
    assert r.status == 200
    assert r.body == site_bytes("notes.txt")


# --- fixed routes ----------------------------------------------------------

def test_hello(m0_server):
    server = m0_server(HELLO_CONFIG)
    r = request(server.port, "GET", "/hello")
    assert r.status == 200
    assert r.body == b"Hello, World!"
    assert r.header("Content-Type") == "text/plain"
    assert r.header("Content-Length") == "13"
    assert request(server.port, "GET", "/other").status == 404
    r = request(server.port, "DELETE", "/hello")
    assert r.status == 405
    assert r.header("Allow") == "GET, HEAD"


def test_routes_come_before_static(static_server):
    r = request(static_server.port, "GET", "/health")
    assert r.status == 200
    assert r.body == b"ok"
    assert r.header("Cache-Control") == "no-store"


def test_prefix_route_status_and_headers(m0_server):
    server = m0_server(config_with(routes=(
        "  routes:\n"
        "    - {path: /api/*, method: [GET, POST], status: 201, headers: {X-Kind: api}, body: made}\n")))
    r = request(server.port, "POST", "/api/things", body=b"{}")
    assert r.status == 201
    assert r.body == b"made"
    assert r.header("X-Kind") == "api"
    assert request(server.port, "GET", "/api").status == 404


def test_keep_alive_reuses_the_connection(m0_server):
    server = m0_server(HELLO_CONFIG)
    with server.connect() as s:
        reader = ResponseReader(s)
        for _ in range(2):
            s.sendall(raw_request("GET", "/hello"))
            r = reader.read()
            assert r.status == 200
            assert r.body == b"Hello, World!"
            assert (r.header("Connection") or "").lower() != "close"


def test_three_pipelined_requests_answered_in_order(static_server):
    with static_server.connect() as s:
        s.sendall(raw_request("GET", "/notes.txt") + raw_request("GET", "/health") +
                  raw_request("GET", "/css/site.css", {"Connection": "close"}))
        reader = ResponseReader(s)
        bodies = [reader.read().body for _ in range(3)]
    assert bodies == [site_bytes("notes.txt"), b"ok", site_bytes("css/site.css")]


def test_chunked_upload_is_echoed(m0_server):
    server = m0_server(config_with(routes="  routes:\n    - {path: /echo, method: POST, echo: true}\n"))
    parts = [b"hello ", b"chunked ", b"x" * 5000, b" world"]
    with server.connect() as s:
        s.sendall(raw_request("POST", "/echo", {"Transfer-Encoding": "chunked",
                                                "Content-Type": "application/x-test"}))
        for part in parts:
            s.sendall(b"%x\r\n%s\r\n" % (len(part), part))
            server.wait_until_read(s)  # each chunk its own read
        s.sendall(b"0\r\n\r\n")
        r = ResponseReader(s).read()
    assert r.status == 200
    assert r.body == b"".join(parts)
    assert r.header("Content-Type") == "application/x-test"


def test_head_on_a_route(m0_server):
    server = m0_server(HELLO_CONFIG)
    r = request(server.port, "HEAD", "/hello")
    assert r.status == 200
    assert r.header("Content-Length") == "13"
    assert r.body == b""


def test_delayed_route_does_not_block_the_reactor(m0_server):
    server = m0_server(config_with(routes=(
        "  routes:\n    - {path: /slow, delay: 3s, body: late}\n    - {path: /fast, body: quick}\n")))
    with server.open_request("/slow") as slow:
        # One reactor thread: /fast can only be answered if /slow's wait is a timer.
        r = request(server.port, "GET", "/fast")
        assert r.body == b"quick"
        slow.setblocking(False)
        with pytest.raises(BlockingIOError):
            slow.recv(1)  # /slow has not answered yet
        slow.setblocking(True)
        r = ResponseReader(slow, timeout=10).read()
        assert r.body == b"late"


def test_sigterm_during_a_slow_request_still_answers(m0_server):
    server = m0_server(config_with(routes="  routes:\n    - {path: /slow, delay: 1500ms, body: finally}\n"))
    with server.open_request("/slow") as s:
        server.send_signal(signal.SIGTERM)
        r = ResponseReader(s, timeout=10).read()
    assert r.status == 200
    assert r.body == b"finally"
    assert server.wait(timeout=20) == 0


def test_a_client_that_stops_reading_is_cut_at_write_timeout(m0_server, tmp_path):
    # A file much larger than what the socket buffers on both ends hold, so
    # that m0's writes stall once the client stops reading.
    size = 64 << 20
    with open(tmp_path / "big.bin", "wb") as f:
        f.truncate(size)
    server = m0_server(config_with(
        routes="  routes:\n    - {path: /health, body: ok}\n",
        static=f"  static: {{prefix: /, root: '{tmp_path}'}}\n") + "http:\n  write_timeout: 1s\n")
    with server.connect() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.sendall(raw_request("GET", "/big.bin"))
        client_port = s.getsockname()[1]
        # m0 closes its end (it leaves ESTABLISHED) while the client reads nothing.
        server.wait_until(lambda: (m0test.server_end(server.port, client_port) or ("gone",))[0]
                          != m0test.TCP_ESTABLISHED, what="m0 to give up on the stalled write")
        received = len(m0test.recv_until_closed(s, timeout=10))
    assert received < size
    assert request(server.port, "GET", "/health").body == b"ok"


# --- configuration ---------------------------------------------------------

@pytest.mark.parametrize("config", [HELLO_CONFIG, STATIC_CONFIG])
def test_shipped_configs_pass_check(config):
    r = run_m0("--check", "--config", config)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("body,key", [
    ("  rutes: []\n", "rutes"),
    ("  routes:\n    - {path: /x, bdy: hi}\n", "bdy"),
    ("  routes:\n    - {path: /x, delay: soon}\n", "delay"),
    ("  routes:\n    - {path: /x, headers: {Content-Length: '3'}}\n", "Content-Length"),
    ("  static: {root: ./no-such-dir-here}\n", "root"),
    ("  static: {root: /, idx: a.html}\n", "idx"),
])
def test_bad_frontend_keys_are_named(tmp_path, body, key):
    path = tmp_path / "bad.yaml"
    path.write_text(config_with() + body)
    r = run_m0("--check", "--config", str(path))
    assert r.returncode == 2  # README: a configuration or plugin error
    message = r.stdout + r.stderr
    assert key in message
    assert "bad.yaml:" in message
