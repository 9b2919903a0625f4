"""TLS on a listener marked `tls` (`--listen "HOST:PORT tls"` and the `tls:`
section), with real clients (Python's ssl, curl, wrk) and certificates made at
test time: native routes and static files over TLS beside a plain listener,
plain HTTP and junk on the TLS port, a client that stalls in the handshake,
the failures counted by reason in /metrics, session resumption across serving
processes, PROXY protocol in front of TLS, and certificate reloads on SIGHUP
(renewed behind a symlink as certbot leaves them, a broken one refused) in a
single process and under a supervisor, under load without a failed request."""
import hashlib
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

import pytest

import m0test
from support.tls import TLS_LISTEN, ServerCertificate

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "telemetry"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "server"))
from load_support import Wrk, wait_for_requests  # noqa: E402
from metrics_support import metrics_port, samples, value  # noqa: E402
from prefork_support import wait_for_children  # noqa: E402

BIG_FILE_BYTES = 3 * 1024 * 1024 + 17


def native_config(certs, root, extra_tls=None, extra=""):
    return (
        "frontend:\n"
        "  type: http\n"
        "  routes:\n"
        "    - {path: /hello, body: 'Hello, World!', headers: {Content-Type: text/plain}}\n"
        "  static:\n"
        "    prefix: /files\n"
        f"    root: {root}\n"
        "metrics:\n"
        "  listen: 127.0.0.1:0\n"
        + certs.tls_section(**(extra_tls or {})) + extra
    )


@pytest.fixture
def site(tmp_path):
    """A certificate and a static root holding a large file."""
    certs = ServerCertificate(tmp_path / "certs")
    root = tmp_path / "www"
    root.mkdir()
    (root / "big.bin").write_bytes(os.urandom(BIG_FILE_BYTES))
    return certs, root


def https_get(port, path, context, server_hostname="localhost", headers=None, session=None, method="GET",
              body=b""):
    """One request on a new TLS connection: (the response, facts of the TLS session)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(10))
    with context.wrap_socket(raw, server_hostname=server_hostname, session=session) as tls:
        lines = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        tls.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        response = m0test.ResponseReader(tls).read()
        facts = {"version": tls.version(), "cert": tls.getpeercert(binary_form=True),
                 "reused": tls.session_reused, "session": tls.session}
    return response, facts


def tls_failures(port):
    found = samples(port)
    return {labels_reason: v for (name, labels), v in found.items()
            if name == "m0_tls_handshake_failures_total" for (_, labels_reason) in labels}


def test_native_route_and_static_file_over_tls_beside_a_plain_listener(m0_server, site):
    certs, root = site
    server = m0_server(native_config(certs, root), *TLS_LISTEN)
    plain, secure = server.ports[0], server.ports[1]
    response, facts = https_get(secure, "/hello", certs.client_context())
    assert (response.status, response.body) == (200, b"Hello, World!")
    assert facts["version"] in ("TLSv1.2", "TLSv1.3") and facts["cert"] == certs.leaf_der()
    assert m0test.request(plain, path="/hello").body == b"Hello, World!"
    # The static file leaves through TLS (no sendfile): whole, then a range.
    expected = (root / "big.bin").read_bytes()
    response, _ = https_get(secure, "/files/big.bin", certs.client_context())
    assert response.status == 200 and hashlib.sha256(response.body).digest() == hashlib.sha256(expected).digest()
    response, _ = https_get(secure, "/files/big.bin", certs.client_context(), headers={"Range": "bytes=1000000-1000099"})
    assert response.status == 206 and response.body == expected[1000000:1000100]
    # curl, with its own TLS stack and defaults, keep-alive over two requests.
    out = subprocess.run(["curl", "-sS", "--cacert", certs.ca_file, "-w", " %{http_code} %{num_connects}\\n",
                          f"https://localhost:{secure}/hello", f"https://localhost:{secure}/hello",
                          "--resolve", f"localhost:{secure}:127.0.0.1"],
                         capture_output=True, text=True, timeout=m0test.scaled(30))
    assert out.stdout.splitlines() == ["Hello, World! 200 1", "Hello, World! 200 0"], out.stderr
    found = samples(metrics_port(server))
    assert value(found, "m0_tls_handshakes_total") >= 4
    assert server.stop() == 0


def test_plain_http_junk_and_a_stalled_handshake_are_closed_and_counted(m0_server, site):
    certs, root = site
    server = m0_server(native_config(certs, root, {"handshake_timeout": "300ms"}), *TLS_LISTEN)
    secure = server.ports[1]
    mport = metrics_port(server)
    # Plain HTTP on the TLS port: told so, in plain HTTP, then closed.
    with socket.create_connection(("127.0.0.1", secure), timeout=m0test.scaled(10)) as sock:
        sock.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        reply = m0test.recv_until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply
    assert reply.endswith(b"This port speaks HTTPS: plain HTTP was sent to it.\n")
    # Junk that is no TLS record: closed without an answer.
    with socket.create_connection(("127.0.0.1", secure), timeout=m0test.scaled(10)) as sock:
        sock.sendall(b"\x00\x01\x02junk that is not TLS at all\r\n\r\n")
        assert m0test.recv_until_closed(sock) == b""
    # A client that starts a record and stops: closed at the handshake timeout.
    with socket.create_connection(("127.0.0.1", secure), timeout=m0test.scaled(10)) as sock:
        sock.sendall(b"\x16\x03\x01\x02\x00\x01")
        assert m0test.recv_until_closed(sock) == b""
    failures = server.wait_until(lambda: (lambda f: f if f.get("timeout") == 1 else None)(tls_failures(mport)),
                                 what="the stalled handshake to be counted")
    assert failures["plain_http"] == 1 and failures["malformed"] == 1, failures
    # Failures are debug lines only: no error flood at the default level.
    assert "TLS handshake failed" not in server.output() and " error: " not in server.output()
    # The listener serves on.
    response, _ = https_get(secure, "/hello", certs.client_context())
    assert response.status == 200
    assert server.stop() == 0


def test_a_client_refusing_the_certificate_is_counted_as_its_alert(m0_server, site):
    certs, root = site
    server = m0_server(native_config(certs, root), *TLS_LISTEN)
    mport = metrics_port(server)
    with pytest.raises(ssl.SSLCertVerificationError):
        https_get(server.ports[1], "/hello", ssl.create_default_context())  # trusts no test CA
    server.wait_until(lambda: tls_failures(mport).get("peer_alert") == 1, what="the refusal to be counted")
    assert server.stop() == 0


def resumed_requests(port, certs, count):
    """A first connection, then `count` more resuming its session; whether each resumed."""
    ctx = certs.client_context()
    _, first = https_get(port, "/hello", ctx)
    assert not first["reused"]
    return [https_get(port, "/hello", ctx, session=first["session"])[1]["reused"] for _ in range(count)]


@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_sessions_resume_across_serving_processes(m0_server, site, version):
    certs, root = site
    server = m0_server(native_config(certs, root), *TLS_LISTEN, "--workers", "2")
    ctx_version = getattr(ssl.TLSVersion, version)
    original = certs.client_context

    def pinned():
        ctx = original()
        ctx.minimum_version = ctx.maximum_version = ctx_version
        return ctx
    certs.client_context = pinned
    # Every process derives the same ticket keys: wherever a connection
    # lands, the ticket another process issued resumes.
    assert resumed_requests(server.ports[1], certs, 8) == [True] * 8
    found = samples(metrics_port(server))
    assert value(found, "m0_tls_resumed_total") == 8
    assert server.stop() == 0


def test_proxy_protocol_in_front_of_tls(m0_server, site):
    certs, root = site
    server = m0_server(native_config(certs, root), "--listen", "127.0.0.1:0 proxy tls")
    raw = socket.create_connection(("127.0.0.1", server.ports[1]), timeout=m0test.scaled(10))
    # The header and the ClientHello in one segment: the TLS bytes after the
    # header must reach the handshake.
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
    raw.sendall(b"PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\r\n")
    with certs.client_context().wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        response = m0test.ResponseReader(tls).read()
    assert response.status == 200 and response.body == b"Hello, World!"
    assert server.stop() == 0


def renewable_certificate(tmp_path):
    """A certificate in archive/N and live/ symlinks to it, as certbot keeps them."""
    live = tmp_path / "live"
    live.mkdir()
    first = ServerCertificate(tmp_path / "archive" / "1")
    for name in ("cert.pem", "key.pem"):
        os.symlink(os.path.join(first.directory, name), live / name)
    return first, live


def renew(tmp_path, live, number, ca):
    renewed = ServerCertificate(tmp_path / "archive" / str(number), ca=ca)
    for name in ("cert.pem", "key.pem"):
        tmp = live / (name + ".new")
        os.symlink(os.path.join(renewed.directory, name), tmp)
        os.replace(tmp, live / name)
    return renewed


def served_cert(port, certs):
    return https_get(port, "/hello", certs.client_context())[1]["cert"]


def test_sighup_reloads_certificates_in_a_single_process_and_keeps_open_connections(m0_server, tmp_path):
    first, live = renewable_certificate(tmp_path)
    root = tmp_path / "www"
    root.mkdir()
    config = native_config(first, root).replace(first.cert, str(live / "cert.pem")).replace(first.key,
                                                                                             str(live / "key.pem"))
    server = m0_server(config, *TLS_LISTEN)
    secure = server.ports[1]
    assert served_cert(secure, first) == first.leaf_der()
    # A keep-alive connection opened before the reload.
    raw = socket.create_connection(("127.0.0.1", secure), timeout=m0test.scaled(10))
    kept = first.client_context().wrap_socket(raw, server_hostname="localhost")
    kept.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
    reader = m0test.ResponseReader(kept)
    assert reader.read().status == 200

    def sighup(outcome):
        """SIGHUP, then the log line saying how it went; the connection
        opened before still answers."""
        server.send_signal(signal.SIGHUP)
        server.wait_for_log(outcome)
        server.signalled.clear()
        kept.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert reader.read().status == 200

    renewed = renew(tmp_path, live, 2, first.ca)
    sighup("received SIGHUP: TLS certificates and keys reloaded")
    assert served_cert(secure, first) == renewed.leaf_der()

    # A broken renewal (the key of another certificate) is refused; the
    # certificate loaded before serves on.
    other = ServerCertificate(tmp_path / "other", ca=first.ca)
    os.replace(str(live / "key.pem"), str(live / "old-key"))
    os.symlink(other.key, live / "key.pem")
    sighup("the TLS certificates did not load (above); the ones loaded before serve on")
    assert served_cert(secure, first) == renewed.leaf_der()
    kept.close()
    assert server.stop() == 0


def test_reloads_under_https_load_fail_no_request(m0_server, tmp_path):
    """SIGHUP under wrk's HTTPS load: in one process (new certificates for
    new connections) and under a supervisor (new worker processes with the
    renewed certificate, the old ones drained): no socket error, no failed
    request."""
    if not shutil.which("wrk"):
        pytest.fail("wrk is not installed (scripts/setup installs it)")
    first, live = renewable_certificate(tmp_path)
    root = tmp_path / "www"
    root.mkdir()
    access = tmp_path / "access.log"
    config = native_config(first, root, extra=f"log: {{access: true, access_file: {access}}}\n")
    config = config.replace(first.cert, str(live / "cert.pem")).replace(first.key, str(live / "key.pem"))
    for workers in ("1", "2"):
        server = m0_server(config, *TLS_LISTEN, "--workers", workers)
        secure = server.ports[1]
        wrk = Wrk(secure, scheme="https")
        try:
            wait_for_requests(server, access, 200)
            for number in (2, 3):
                renewed = renew(tmp_path / workers, live, number, first.ca)
                previous = wait_for_children(server.proc.pid, 2) if workers == "2" else []
                server.send_signal(signal.SIGHUP)
                server.signalled.clear()
                if workers == "1":
                    server.wait_for_log("received SIGHUP: TLS certificates and keys reloaded", count=number - 1)
                else:
                    server.wait_for_log("supervisor: reloaded: 2 new worker process(es) serve", count=number - 1,
                                        timeout=60)
                # Until the previous processes are gone, one of them may
                # still take a connection (with the certificate before).
                for pid in previous:
                    server.wait_for_log(f"supervisor: previous worker process (pid {pid}) exited with code 0",
                                        timeout=60)
                wait_for_requests(server, access, 100)
                assert served_cert(secure, first) == renewed.leaf_der()
            requests, errors = wrk.stop()
        finally:
            wrk.kill()
        assert requests > 0 and not errors, wrk.output + "\nm0's log:\n" + server.output()
        assert server.stop() == 0


def test_sni_chooses_the_chain_of_the_name_asked_for(m0_server, site, tmp_path):
    certs, root = site
    other = ServerCertificate(tmp_path / "other", ca=certs.ca, names=("b.example",))
    extra = f"  sni:\n    - {{cert: {other.cert}, key: {other.key}}}\n"
    server = m0_server(native_config(certs, root).replace("tls:\n", "tls:\n" + extra, 1), *TLS_LISTEN)
    secure = server.ports[1]
    # The names come from the chain's subjectAltName; the client checks
    # the certificate it gets against the name it asked for.
    response, facts = https_get(secure, "/hello", certs.client_context(), server_hostname="b.example")
    assert response.status == 200 and facts["cert"] == other.leaf_der()
    assert served_cert(secure, certs) == certs.leaf_der()
    unchecked = ssl.create_default_context()
    unchecked.check_hostname, unchecked.verify_mode = False, ssl.CERT_NONE
    _, facts = https_get(secure, "/hello", unchecked, server_hostname="c.example")
    assert facts["cert"] == certs.leaf_der()  # no chain for that name: the default one
    assert server.stop() == 0


@pytest.mark.parametrize("scheduler", ["reactors", "balanced"])
def test_a_realtime_hold_and_a_websocket_over_tls(m0_server, site, scheduler):
    from websockets.sync.client import connect
    from support.sse_stream import StreamReader
    certs, _ = site
    tls_args = (*TLS_LISTEN, "--scheduler", scheduler, "--set", f"tls.cert={certs.cert}", "--set",
                f"tls.key={certs.key}")
    configs = os.path.join(m0test.SOURCE_DIR, "configs")
    server = m0_server(os.path.join(configs, "flask-realtime.yaml"), *tls_args, threads=2,
                       env={"VIRTUAL_ENV": sys.prefix})
    secure = server.ports[1]
    raw = socket.create_connection(("127.0.0.1", secure), timeout=m0test.scaled(20))
    with certs.client_context().wrap_socket(raw, server_hostname="localhost") as held:
        held.sendall(b"GET /events?room=lobby HTTP/1.1\r\nHost: localhost\r\n\r\n")
        stream = StreamReader(held, timeout=20)
        status, headers = stream.head()
        assert status == 200 and ("content-type", "text/event-stream") in headers
        said, _ = https_get(secure, "/say", certs.client_context(), headers={
            "Content-Type": "application/x-www-form-urlencoded", "Content-Length": "21"}, method="POST",
            body=b"room=lobby&text=hello")
        assert said.status == 204
        assert stream.event() == {"event": "message", "data": '{"room": "lobby", "text": "hello"}'}
    assert server.stop() == 0
    server = m0_server(os.path.join(configs, "websocket-echo.yaml"), *tls_args, threads=2)
    with connect(f"wss://localhost:{server.ports[1]}/ws", ssl=certs.client_context(),
                 open_timeout=m0test.scaled(10), ping_interval=None) as ws:
        for text in ("one", "two" * 10000):
            ws.send(text)
            assert ws.recv(timeout=m0test.scaled(10)) == text
    assert server.stop() == 0


def process_cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_half_a_record_waits_on_the_socket_not_in_a_loop(m0_server, site):
    """OpenSSL reads ahead, so it may hold part of a record the socket no
    longer has: the reactor must wait for the rest on the socket, not keep
    asking OpenSSL (which spun a core until the rest came)."""
    certs, root = site
    server = m0_server(native_config(certs, root), *TLS_LISTEN)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = certs.client_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with socket.create_connection(("127.0.0.1", server.ports[1]), timeout=m0test.scaled(10)) as sock:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                incoming.write(sock.recv(65536))
        sock.sendall(outgoing.read())
        tls.write(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + b"a" * 3000 + b"\r\n\r\n")
        record = outgoing.read()
        sock.sendall(record[:len(record) // 2])
        server.wait_until_read(sock)
        before = process_cpu_seconds(server.proc.pid)
        time.sleep(1.0)  # a window to measure m0's CPU in, not a wait for an event
        used = process_cpu_seconds(server.proc.pid) - before
        assert used < 0.3, f"m0 used {used:.2f} s of CPU in 1 s while half a record waited"
        sock.sendall(record[len(record) // 2:])
        answer = b""
        while b"Hello, World!" not in answer:
            incoming.write(sock.recv(65536))
            try:
                answer += tls.read(65536)
            except ssl.SSLWantReadError:
                pass
    assert server.stop() == 0
