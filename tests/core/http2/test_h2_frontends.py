"""HTTP/2 end to end through every frontend, with real clients: httpx
(prior-knowledge h2c and TLS with ALPN), curl and h2load, and the h2
state machine for what they do not show (trailers, resets, several cookie
fields, GOAWAY). The apps are those of the frontend-asgi and frontend-wsgi
tests. Also: listeners marked `h1` (no h2: the preface is not recognised,
ALPN offers only http/1.1), `http2.enabled: false` with a listener marked
`h2`, the 431 of a head over max_header_list_size, metrics and access log,
and the drain (GOAWAY, the open stream finishes)."""
import hashlib
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time

import hpack
import httpx
import pytest
from hyperframe.frame import DataFrame, GoAwayFrame, HeadersFrame, PingFrame, RstStreamFrame, SettingsFrame

import m0test
from h2_support import (CANCEL, INTERNAL_ERROR, NO_ERROR, PREFACE, Client, FrameReader, asgi_config, connect,
                        h2_context, native_config, python_plugins_built, wsgi_config)
from support.tls import TLS_LISTEN, ServerCertificate

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "telemetry"))
from metrics_support import metrics_port, samples, value  # noqa: E402

needs_python = pytest.mark.skipif(not python_plugins_built(),
                                  reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")
MIB = 1024 * 1024


@pytest.fixture
def certs(tmp_path):
    return ServerCertificate(tmp_path / "certs")


@pytest.fixture
def www(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    (root / "data.bin").write_bytes(os.urandom(3 * MIB + 17))
    return root


def httpx_client(certs=None):
    """httpx speaking HTTP/2 only: prior knowledge on http://, ALPN h2 on
    https:// (trusting `certs`)."""
    if certs is None:
        return httpx.Client(http1=False, http2=True, timeout=m0test.scaled(20))
    return httpx.Client(http2=True, verify=h2_context(certs, ("h2", "http/1.1")), timeout=m0test.scaled(20))


def h2_json(method, url, certs=None, **kwargs):
    """The JSON body of a 200 answered over HTTP/2 (h2c, or TLS trusting `certs`)."""
    with httpx_client(certs) as client:
        response = client.request(method, url, **kwargs)
    assert response.http_version == "HTTP/2" and response.status_code == 200, response.text
    return response.json()


def urls(server, path):
    """The same path over h2c (the plain listener) and TLS (the second)."""
    return (f"http://127.0.0.1:{server.ports[0]}{path}", f"https://localhost:{server.ports[1]}{path}")


@needs_python
def test_wsgi_environ_over_h2c_and_tls(m0_server, certs):
    server = m0_server(wsgi_config("wsgi_apps:validated") + certs.tls_section(), *TLS_LISTEN)
    plain, secure = urls(server, "/environ")
    environ = h2_json("GET", plain)
    assert environ["SERVER_PROTOCOL"] == "HTTP/2"
    assert environ["HTTP_HOST"] == f"127.0.0.1:{server.ports[0]}"
    assert environ["wsgi.url_scheme"] == "http"
    environ = h2_json("GET", secure, certs)
    assert environ["SERVER_PROTOCOL"] == "HTTP/2" and environ["wsgi.url_scheme"] == "https"
    # :authority is the Host header; two cookie fields are one header again.
    client = Client(server.ports[0])
    response = client.get("/environ", authority="example.test:8443",
                          headers=[("cookie", "a=1"), ("cookie", "b=2"), ("x-other", "y")])
    client.close()
    environ = json.loads(bytes(response.body))
    assert response.status == 200
    assert environ["HTTP_HOST"] == "example.test:8443"
    assert environ["SERVER_NAME"] in ("example.test", "127.0.0.1"), environ["SERVER_NAME"]
    assert environ["HTTP_COOKIE"] == "a=1; b=2"
    assert environ["HTTP_X_OTHER"] == "y"
    assert server.stop() == 0


@needs_python
def test_asgi_scope_over_h2c_and_tls(m0_server, certs):
    server = m0_server(asgi_config("asgi_apps:scope_echo") + certs.tls_section(), *TLS_LISTEN)
    plain, secure = urls(server, "/scope?q=1")
    scope = h2_json("GET", plain)
    assert scope["http_version"] == "2" and scope["scheme"] == "http"
    assert scope["path"] == "/scope" and scope["query_string"] == {"bytes": "q=1"}
    scope = h2_json("POST", secure, certs, content=b"z" * 100000)
    assert scope["http_version"] == "2" and scope["scheme"] == "https" and scope["body_len"] == 100000
    client = Client(server.ports[0])
    response = client.get("/", authority="example.test", headers=[("cookie", "a=1"), ("cookie", "b=2")])
    client.close()
    headers = [(k["bytes"], v["bytes"]) for k, v in json.loads(bytes(response.body))["headers"]]
    assert ("host", "example.test") in headers, headers
    assert [v for k, v in headers if k == "cookie"] == ["a=1; b=2"], headers
    assert not [k for k, _ in headers if k.startswith(":")], headers
    assert server.stop() == 0


def test_native_route_and_static_range_with_curl_and_httpx(m0_server, certs, www):
    server = m0_server(native_config(www) + certs.tls_section(), *TLS_LISTEN)
    plain, secure = urls(server, "/hello")
    out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "-w", " %{http_version}", plain],
                         capture_output=True, text=True, timeout=m0test.scaled(30))
    assert out.stdout == "Hello, World! 2", out.stderr
    out = subprocess.run(["curl", "-sS", "--http2", "--cacert", certs.ca_file, "--resolve",
                          f"localhost:{server.ports[1]}:127.0.0.1", "-w", " %{http_version}", secure, secure],
                         capture_output=True, text=True, timeout=m0test.scaled(30))
    assert out.stdout == "Hello, World! 2Hello, World! 2", out.stderr
    expected = (www / "data.bin").read_bytes()
    for url, client in ((urls(server, "/files/data.bin")[0], httpx_client()),
                        (urls(server, "/files/data.bin")[1], httpx_client(certs))):
        with client:
            whole = client.get(url)
            assert whole.http_version == "HTTP/2" and whole.status_code == 200
            assert hashlib.sha256(whole.content).digest() == hashlib.sha256(expected).digest()
            part = client.get(url, headers={"Range": "bytes=1000000-1000099"})
            assert part.status_code == 206 and part.content == expected[1000000:1000100]
            assert part.headers["content-range"] == f"bytes 1000000-1000099/{len(expected)}"
            tail = client.get(url, headers={"Range": "bytes=-10"})
            assert tail.status_code == 206 and tail.content == expected[-10:]
    assert server.stop() == 0


def h2load(url, *args):
    """Runs h2load; returns (requests, succeeded) from its summary."""
    out = subprocess.run(["h2load", *args, url], capture_output=True, text=True, timeout=m0test.scaled(120))
    found = re.search(r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded", out.stdout)
    assert found, out.stdout + out.stderr
    return int(found.group(1)), int(found.group(2)), out.stdout


def test_h2load_native_many_streams(m0_server, certs, www):
    server = m0_server(native_config(www) + certs.tls_section(), *TLS_LISTEN)
    plain, secure = urls(server, "/hello")
    total, succeeded, report = h2load(plain, "-c10", "-m100", "-n2000")
    assert (total, succeeded) == (2000, 2000), report
    total, succeeded, report = h2load(secure.replace("localhost", "127.0.0.1"), "-c4", "-m50", "-n1000")
    assert (total, succeeded) == (1000, 1000), report
    assert "h2" in report
    assert server.stop() == 0


@needs_python
@pytest.mark.parametrize("frontend", ["wsgi", "asgi"])
def test_h2load_python_frontends(m0_server, frontend):
    config = wsgi_config("wsgi_apps:hello", threads=4) if frontend == "wsgi" else asgi_config("asgi_apps:stream")
    server = m0_server(config)
    total, succeeded, report = h2load(f"http://127.0.0.1:{server.port}/?n=3&size=100", "-c10", "-m100", "-n2000")
    assert (total, succeeded) == (2000, 2000), report
    assert server.stop() == 0


@needs_python
def test_request_bodies_larger_than_the_window_stream_both_ways(m0_server, certs):
    """1 MiB up (16 times the stream's window, so m0 must open it as the
    app reads) and echoed back, over h2c and TLS; WSGI counts and hashes
    what it read."""
    body = os.urandom(MIB)
    server = m0_server(asgi_config("asgi_apps:echo") + certs.tls_section(), *TLS_LISTEN)
    for client in (Client(server.ports[0]), Client(server.ports[1], h2_context(certs))):
        response = client.response(client.request("/", method="POST", body=body))
        assert response.status == 200 and bytes(response.body) == body
        # Two at once on the same connection.
        first = client.request("/", method="POST", body=None, end_stream=False)
        second = client.request("/", method="POST", body=body[::-1])
        client.send_body(first, body)
        assert bytes(client.response(first).body) == body and bytes(client.response(second).body) == body[::-1]
        client.close()
    with httpx_client() as http:
        response = http.post(f"http://127.0.0.1:{server.port}/", content=iter([body[:300000], body[300000:]]))
    assert response.http_version == "HTTP/2" and response.content == body
    assert server.stop() == 0

    server = m0_server(wsgi_config("upload_apps:count"))
    with httpx_client() as http:
        for content in (body, iter([body[:1000], body[1000:]])):
            response = http.post(f"http://127.0.0.1:{server.port}/", content=content)
            assert response.http_version == "HTTP/2" and response.status_code == 200, response.text
            facts = response.json()
            assert facts["bytes"] == MIB and facts["sha256"] == hashlib.sha256(body).hexdigest(), facts
    assert server.stop() == 0


@needs_python
def test_asgi_trailers(m0_server):
    server = m0_server(asgi_config("body_apps:with_trailers"))
    client = Client(server.port)
    response = client.get("/", headers=[("te", "trailers")])
    assert response.status == 200 and bytes(response.body) == b"first;second;third"
    assert response.trailers == [("x-digest", hashlib.sha256(b"first;second;third").hexdigest()), ("x-count", "3")]
    # No connection-specific field in the head (RFC 9113, 8.2.2).
    assert response.header("transfer-encoding") is None and response.header("connection") is None
    client.close()
    assert server.stop() == 0


@needs_python
def test_client_reset_in_a_wsgi_streamed_response(m0_server):
    """RST_STREAM while the app streams 64 MiB: the app's iterable is closed
    (the client is gone) and the connection serves on."""
    server = m0_server(wsgi_config("wsgi_apps:router"))
    client = Client(server.port, auto_window=False)
    stream = client.request("/big?tag=reset&n=64")
    client.wait(lambda: client.responses[stream].body, what="the first bytes of the body")
    client.reset(stream, CANCEL)
    server.wait_until(lambda: json.loads(m0test.request(server.port, path="/closed?tag=reset").body)["count"] == 1,
                      what="the app's iterable to be closed")
    produced = json.loads(m0test.request(server.port, path="/produced?tag=reset").body)["count"]
    assert produced < 64, produced
    # The same connection: another stream answers once the connection's
    # window, which the reset stream's data filled, is open again.
    client.auto_window = True
    client.conn.increment_flow_control_window(len(client.responses[stream].body))
    client.flush()
    response = client.get("/hello")
    assert response.status == 200 and bytes(response.body) == b"Hello, World!"
    client.close()
    assert server.stop() == 0


@needs_python
def test_client_reset_in_asgi_streams(m0_server):
    """RST_STREAM while an ASGI app streams (its send() raises) and while
    it waits for the client to go (receive() says http.disconnect)."""
    server = m0_server(asgi_config("body_apps:slow_stream"))
    client = Client(server.port)
    stream = client.request("/")
    server.wait_for_log("slow_stream: streaming")
    client.reset(stream, CANCEL)
    server.wait_for_log("slow_stream: send raised")
    client.close()
    assert server.stop() == 0

    server = m0_server(asgi_config("body_apps:long_poll"))
    client = Client(server.port)
    stream = client.request("/", method="POST", body=b"payload")
    server.wait_for_log("long_poll: waiting")
    client.reset(stream, CANCEL)
    server.wait_for_log("long_poll: woke with http.disconnect")
    # A second stream on the same connection is served alike.
    other = client.request("/", method="POST", body=b"again")
    server.wait_for_log("long_poll: waiting", count=2)
    client.reset(other, CANCEL)
    server.wait_for_log("long_poll: woke with http.disconnect", count=2)
    client.close()
    assert server.stop() == 0


def preface_answer(port):
    """The first bytes m0 answers to the HTTP/2 preface and a SETTINGS
    frame (an HTTP/2 server's SETTINGS frame, or an HTTP/1.1 answer up to
    the close)."""
    sock = connect(port)
    sock.sendall(PREFACE + SettingsFrame(0).serialize())
    answer = b""
    while len(answer) < 9 or answer.startswith(b"HTTP/"):
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
        except (socket.timeout, TimeoutError):
            break
        if not data:
            break
        answer += data
    sock.close()
    return answer


def alpn(port, certs, protocols=("h2", "http/1.1")):
    """The protocol m0 chooses by ALPN among `protocols` ("refused": it
    ended the handshake)."""
    try:
        sock = connect(port, h2_context(certs, protocols))
    except ssl.SSLError:
        return "refused"
    chosen = sock.selected_alpn_protocol()
    sock.close()
    return chosen


def is_h2_settings(answer):
    return len(answer) >= 9 and answer[3] == 0x4 and answer[5:9] == b"\0\0\0\0"


def test_listeners_marked_h1_speak_http11_only(m0_server, certs, www):
    server = m0_server(native_config(www) + certs.tls_section(), "--listen", "127.0.0.1:0 h1",
                       "--listen", "127.0.0.1:0 h1 tls", *TLS_LISTEN)
    default, h1, h1_tls, tls = server.ports
    # The default plain listener recognises the preface; the h1 one answers
    # it as a malformed HTTP/1.1 request.
    assert is_h2_settings(preface_answer(default))
    answer = preface_answer(h1)
    assert answer.startswith(b"HTTP/1.1 4") or answer.startswith(b"HTTP/1.1 5") or answer == b"", answer[:200]
    assert not is_h2_settings(answer)
    assert m0test.request(h1, path="/hello").body == b"Hello, World!"
    # ALPN: h2 where it is on, only http/1.1 on the h1 listener.
    assert alpn(tls, certs) == "h2"
    assert alpn(h1_tls, certs) == "http/1.1"
    assert alpn(h1_tls, certs, ("h2",)) in (None, "refused")
    out = subprocess.run(["curl", "-sS", "--http2", "--cacert", certs.ca_file, "--resolve",
                          f"localhost:{h1_tls}:127.0.0.1", "-w", " %{http_version}",
                          f"https://localhost:{h1_tls}/hello"],
                         capture_output=True, text=True, timeout=m0test.scaled(30))
    assert out.stdout == "Hello, World! 1.1", out.stderr
    assert server.stop() == 0


def test_http2_disabled_then_on_for_a_listener_marked_h2(m0_server, certs, www):
    config = native_config(www) + certs.tls_section() + "http2:\n  enabled: false\n"
    server = m0_server(config, "--listen", "127.0.0.1:0 h2", "--listen", "127.0.0.1:0 tls",
                       "--listen", "127.0.0.1:0 h2 tls")
    default, h2_plain, plain_tls, h2_tls = server.ports
    assert not is_h2_settings(preface_answer(default))
    assert is_h2_settings(preface_answer(h2_plain))
    assert alpn(plain_tls, certs) == "http/1.1"
    assert alpn(h2_tls, certs) == "h2"
    with httpx_client() as client:
        assert client.get(f"http://127.0.0.1:{h2_plain}/hello").http_version == "HTTP/2"
    assert server.stop() == 0


def test_a_head_over_max_header_list_size_gets_431(m0_server, www):
    server = m0_server(native_config(www, "http2:\n  max_header_list_size: 16384\n"))
    client = Client(server.port)
    # Under the limit: served.
    assert client.get("/hello", headers=[("x-big", "a" * 8000)]).status == 200
    response = client.get("/hello", headers=[("x-big", os.urandom(12000).hex())])
    assert response.status == 431 or response.reset is not None, (response.status, response.reset)
    # The connection serves on.
    assert client.get("/hello").status == 200
    client.close()
    assert server.stop() == 0


def test_metrics_and_access_log(m0_server, www, tmp_path):
    access = tmp_path / "access.log"
    extra = f"metrics:\n  listen: 127.0.0.1:0\nlog: {{access: true, access_file: {access}}}\n"
    server = m0_server(native_config(www, extra))
    mport = metrics_port(server)
    client = Client(server.port)
    for _ in range(3):
        assert client.get("/hello").status == 200
    client.close()
    server.wait_until(lambda: value(samples(mport), "m0_http2_streams_total") >= 3, what="3 streams counted")
    found = samples(mport)
    assert value(found, "m0_http2_connections_total") >= 1
    assert value(found, "m0_http2_enhance_your_calm_total") == 0
    server.wait_until(lambda: access.exists() and access.read_text().count("HTTP/2") >= 3,
                      what="3 access log lines saying HTTP/2")
    assert server.stop() == 0


@needs_python
def test_drain_sends_goaway_and_lets_the_open_stream_finish(m0_server):
    server = m0_server(wsgi_config("wsgi_apps:router"))
    sock = connect(server.port)
    encoder, decoder = hpack.Encoder(), hpack.Decoder()
    head = [(":method", "GET"), (":scheme", "http"), (":authority", "localhost"),
            (":path", "/stream?n=30&delay=0.05&tag=drain")]
    sock.sendall(PREFACE + SettingsFrame(0).serialize()
                 + HeadersFrame(1, encoder.encode(head), flags=["END_HEADERS", "END_STREAM"]).serialize())
    reader = FrameReader(sock)
    body, goaway, status, ended = b"", None, None, False
    signalled = False
    while True:
        frame = reader.next(timeout=20)
        assert frame is not None or ended, f"closed before the stream ended ({body!r}, GOAWAY {goaway})"
        if frame is None:
            break
        if isinstance(frame, HeadersFrame) and frame.stream_id == 1:
            status = dict(decoder.decode(frame.data))[":status"]
        elif isinstance(frame, DataFrame) and frame.stream_id == 1:
            body += frame.data
            if not signalled:
                server.send_signal(signal.SIGTERM)
                signalled = True
            ended = ended or "END_STREAM" in frame.flags
        elif isinstance(frame, GoAwayFrame):
            goaway = frame
            assert body and not ended, "GOAWAY came before the drain or after the stream"
        if isinstance(frame, (HeadersFrame, DataFrame)) and "END_STREAM" in frame.flags and frame.stream_id == 1:
            ended = True
    assert status == "200"
    assert body == b"".join(b"chunk%d;" % i for i in range(30))
    assert goaway is not None and goaway.error_code == NO_ERROR and goaway.last_stream_id >= 1, goaway
    assert server.wait() == 0


def test_max_requests_per_connection_then_goaway(m0_server, www):
    server = m0_server(native_config(www, "http2:\n  max_requests_per_connection: 3\n"))
    client = Client(server.port)
    for _ in range(3):
        assert client.get("/hello").status == 200
    client.wait(lambda: client.goaway is not None, what="GOAWAY after the third request")
    assert client.goaway.error_code == NO_ERROR and client.goaway.last_stream_id == 5, client.goaway
    client.wait_closed()
    # A new connection is served again.
    with httpx_client() as http:
        assert http.get(f"http://127.0.0.1:{server.port}/hello").status_code == 200
    assert server.stop() == 0


def test_ping_timeout_closes_a_silent_peer_and_keeps_one_that_answers(m0_server, www):
    server = m0_server(native_config(www, "http2:\n  ping_interval: 300ms\n  ping_timeout: 300ms\n"))
    # A raw peer that never answers PING: closed about 0.6 s after it went quiet.
    silent = connect(server.port)
    silent.sendall(PREFACE + SettingsFrame(0).serialize())
    frames = FrameReader(silent)
    pings = 0
    while (frame := frames.next(timeout=10)) is not None:
        pings += isinstance(frame, PingFrame) and "ACK" not in frame.flags
    assert pings >= 1
    silent.close()
    # The h2 state machine answers every PING: still open after several intervals.
    client = Client(server.port)
    client.wait(lambda: client.pinged >= 3, what="three PINGs from m0")
    assert client.get("/hello").status == 200
    client.close()
    assert server.stop() == 0


@needs_python
def test_a_client_that_closes_its_side_in_the_middle_of_a_body_is_gone(m0_server):
    """HEADERS and part of the body, then the client's FIN: no more DATA can
    come, so the app reading the body hears http.disconnect at once (not at
    http.body_timeout), and a drain then does not wait for the stream."""
    server = m0_server(asgi_config("body_apps:digest", "http:\n  body_timeout: 60s\n"))
    sock = connect(server.port)
    head = hpack.Encoder().encode([(":method", "POST"), (":scheme", "http"), (":authority", "localhost"),
                                   (":path", "/")])
    sock.sendall(PREFACE + SettingsFrame(0).serialize() + HeadersFrame(1, head, flags=["END_HEADERS"]).serialize()
                 + DataFrame(1, b"x" * 1000).serialize())
    server.wait_until_read(sock)
    sock.shutdown(socket.SHUT_WR)
    server.wait_for_log("digest: http.disconnect after", timeout=5)
    sock.close()
    assert server.stop(timeout=5) == 0


@needs_python
@pytest.mark.parametrize("frontend", ["wsgi", "asgi"])
def test_expect_100_continue(m0_server, frontend):
    """A client that waits for the interim 100 before its body (RFC 9110
    10.1.1) gets it, whether the app streams the body or m0 reads it whole."""
    server = m0_server(wsgi_config("upload_apps:count") if frontend == "wsgi" else asgi_config("asgi_apps:echo"))
    client = Client(server.port)
    for size in (5, MIB):
        body = os.urandom(size)
        stream = client.request("/", method="POST", headers=[("expect", "100-continue"),
                                                             ("content-length", str(size))], end_stream=False)
        client.wait(lambda: client.responses[stream].headers, what="the interim 100")
        assert client.responses[stream].headers == [(":status", "100")]
        client.send_body(stream, body)
        response = client.response(stream)
        assert response.status == 200
        if frontend == "asgi":
            assert bytes(response.body) == body
        else:
            assert json.loads(bytes(response.body))["sha256"] == hashlib.sha256(body).hexdigest()
    client.close()
    assert server.stop() == 0


@needs_python
def test_a_misbehaving_wsgi_app_over_h2(m0_server):
    """The frontend-wsgi's PEP 3333 violations over HTTP/2: fields the
    engine owns are dropped (none that RFC 9113 forbids goes out), a
    violation before the head is a 500, one after it resets the stream
    (INTERNAL_ERROR: the client must not take the body as whole), and the
    connection serves on throughout."""
    server = m0_server(wsgi_config("wsgi_apps:bad_app"))
    client = Client(server.port)
    response = client.get("/engine-headers")
    assert response.status == 200 and bytes(response.body) == b"engine headers"
    names = [name for name, _ in response.headers]
    assert "x-kept" in names and not {"connection", "keep-alive", "transfer-encoding"} & set(names), names
    assert response.header("server") == "m0"
    for path in ("/raise", "/str-body", "/bad-status", "/status-crlf", "/header-crlf", "/header-name",
                 "/no-start-response", "/twice"):
        assert client.get(path).status == 500, path
    for path in ("/str-chunk", "/exc-info-after-send"):
        response = client.get(path)
        assert response.reset == INTERNAL_ERROR and not response.ended, (path, response.status, response.reset)
    assert bytes(client.get("/ok").body) == b"still serving"
    client.close()
    assert server.stop() == 0


def test_no_websocket_over_h2_unless_turned_on(m0_server, www):
    """By default (http2.websocket: false) no SETTINGS_ENABLE_CONNECT_PROTOCOL
    (RFC 8441): an extended CONNECT for a WebSocket is refused, and the
    connection serves on."""
    server = m0_server(native_config(www))
    client = Client(server.port)
    client.wait(lambda: client.remote_settings is not None, what="m0's SETTINGS")
    assert SettingsFrame.ENABLE_CONNECT_PROTOCOL not in client.remote_settings, client.remote_settings
    sock = connect(server.port)
    head = hpack.Encoder().encode([(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
                                   (":authority", "localhost"), (":path", "/hello"),
                                   ("sec-websocket-version", "13")])
    sock.sendall(PREFACE + SettingsFrame(0).serialize() + HeadersFrame(1, head, flags=["END_HEADERS"]).serialize())
    reader, outcome = FrameReader(sock), None
    while outcome is None:
        frame = reader.next()
        if frame is None or isinstance(frame, (RstStreamFrame, GoAwayFrame)):
            outcome = frame
        elif isinstance(frame, HeadersFrame):
            outcome = dict(hpack.Decoder().decode(frame.data))[":status"]
    assert outcome is None or isinstance(outcome, (RstStreamFrame, GoAwayFrame)) or outcome != "200", outcome
    sock.close()
    assert client.get("/hello").status == 200
    client.close()
    assert server.stop() == 0


def test_reload_under_a_supervisor_sends_goaway_from_the_old_workers(m0_server, www):
    """SIGHUP with two worker processes: an HTTP/2 connection to a previous
    worker gets GOAWAY (NO_ERROR) and is closed; new connections are served
    by the new workers."""
    server = m0_server(native_config(www), "--workers", "2")
    client = Client(server.port)
    assert client.get("/hello").status == 200
    server.send_signal(signal.SIGHUP)
    server.signalled.clear()
    server.wait_for_log("supervisor: reloaded: 2 new worker process(es) serve", timeout=60)
    client.wait_closed(timeout=20)
    assert client.goaway is not None and client.goaway.error_code == NO_ERROR, client.goaway
    client.close()
    server.wait_for_log("supervisor: previous worker process", count=2, timeout=30)
    with httpx_client() as http:
        response = http.get(f"http://127.0.0.1:{server.port}/hello")
    assert response.http_version == "HTTP/2" and response.text == "Hello, World!"
    assert server.stop() == 0


@needs_python
def test_the_window_follows_the_apps_reads(m0_server):
    """An ASGI app that sleeps 50 ms after each body message: m0 reopens
    the stream's window only as the app reads, so sending 1 MiB (16 windows
    of 64 KiB) takes the client at least 15 of those sleeps, and no message
    is larger than the window."""
    server = m0_server(asgi_config("body_apps:digest"))
    client = Client(server.port)
    body = os.urandom(MIB)
    started = time.monotonic()
    stream = client.request("/?delay=0.05", method="POST", body=body)
    sending = time.monotonic() - started
    facts = json.loads(bytes(client.response(stream).body))
    assert facts["bytes"] == MIB and facts["sha256"] == hashlib.sha256(body).hexdigest()
    assert facts["largest"] <= 65535 and facts["messages"] >= 16, facts
    assert sending >= 15 * 0.05, f"1 MiB went in {sending:.2f}s: m0 took it ahead of the app"
    client.close()
    assert server.stop() == 0
