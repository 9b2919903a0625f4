"""A WSGI app behind a listener marked `tls`, for both executors: the environ
of a TLS connection (wsgi.url_scheme https, HTTPS on, mod_ssl's SSL_* keys)
and none of it on the plain listener beside it; a streamed upload, a streamed
download and a static file with a Range over TLS; client certificates with
tls.client_auth required and optional. Certificates are made at test time
(support/tls.py)."""
import contextlib
import hashlib
import json
import random
import ssl

import pytest

import m0test
from support import tls

APP = "tls_apps:app"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return tls.Certificates(str(tmp_path_factory.mktemp("tls")))


def environ_of(port, context, server_name="localhost"):
    status, _, body = tls.https_request(port, context, "/environ", server_name=server_name)
    assert status == 200, body
    return json.loads(body)


def ssl_keys(environ):
    return {k: v for k, v in environ.items() if k.startswith("SSL_")}


def test_environ_of_a_tls_connection(wsgi_server, certificates):
    server = wsgi_server(APP, "", *certificates.m0_args())
    context = certificates.client_context()
    env = environ_of(server.ports[1], context)
    assert env["wsgi.url_scheme"] == "https" and env["HTTPS"] == "on"
    # The server the client named in Host (http.client's "127.0.0.1:<port>").
    assert (env["SERVER_NAME"], env["SERVER_PORT"]) == ("127.0.0.1", str(server.ports[1]))
    assert env["SSL_PROTOCOL"] in ("TLSv1.2", "TLSv1.3")
    # The same client context agrees on the same again.
    cipher_name, protocol, _ = tls.negotiated(server.ports[1], context)
    assert (env["SSL_CIPHER"], env["SSL_PROTOCOL"]) == (cipher_name, protocol)
    assert env["SSL_TLS_SNI"] == "localhost"
    assert env["SSL_SESSION_RESUMED"] == "Initial"
    assert env["SSL_CLIENT_VERIFY"] == "NONE"
    assert "SSL_CLIENT_S_DN" not in env and "SSL_CLIENT_CERT" not in env
    assert env["SSL_SERVER_CERT"] == certificates.server_pem
    # A connection that resumes an earlier one's session (a ticket).
    body, resumed = tls.get_resuming(server.ports[1], context, "/environ")
    assert resumed and json.loads(body)["SSL_SESSION_RESUMED"] == "Resumed"
    # A client that speaks TLS 1.2 at most.
    tls12 = certificates.client_context(maximum_version=ssl.TLSVersion.TLSv1_2)
    env = environ_of(server.ports[1], tls12)
    assert (env["SSL_CIPHER"], env["SSL_PROTOCOL"]) == tls.negotiated(server.ports[1], tls12)[:2]
    assert env["SSL_PROTOCOL"] == "TLSv1.2"
    # A client that names the server by its address sends no SNI.
    env = environ_of(server.ports[1], context, server_name="127.0.0.1")
    assert "SSL_TLS_SNI" not in env and env["SSL_PROTOCOL"] in ("TLSv1.2", "TLSv1.3")
    # The plain listener of the same server: nothing of TLS.
    env = json.loads(m0test.request(server.port, path="/environ").body)
    assert env["wsgi.url_scheme"] == "http" and "HTTPS" not in env and ssl_keys(env) == {}


def test_streamed_upload_and_download(wsgi_server, certificates):
    server = wsgi_server(APP, "", *certificates.m0_args())
    context = certificates.client_context()
    generator = random.Random(1)
    pieces = [generator.randbytes(256 * 1024) for _ in range(16)]  # 4 MiB
    # An iterator of unknown length: http.client sends it chunked.
    status, _, body = tls.https_request(server.ports[1], context, "/upload", method="POST", body=iter(pieces))
    assert status == 200, body
    answer = json.loads(body)
    assert answer["bytes"] == 4 << 20
    assert answer["sha256"] == hashlib.sha256(b"".join(pieces)).hexdigest()

    with contextlib.closing(tls.https_connection(server.ports[1], context)) as connection:
        connection.request("GET", "/download?mib=6")
        response = connection.getresponse()
        assert response.status == 200
        assert response.getheader("Transfer-Encoding") == "chunked"
        received = hashlib.sha256()
        size = 0
        while piece := response.read(100_000):
            received.update(piece)
            size += len(piece)
    expected = hashlib.sha256(random.Random(24).randbytes(6 << 20))  # as apps/tls_apps.py makes them
    assert size == 6 << 20 and received.hexdigest() == expected.hexdigest()


def test_static_file_with_a_range(wsgi_server, certificates, tmp_path):
    # Written through TLS, the file cannot go by sendfile: the engine reads it
    # and encrypts what it read.
    data = random.Random(2).randbytes(5 << 20)
    (tmp_path / "big.bin").write_bytes(data)
    server = wsgi_server(APP, f"  static: [{{prefix: /static/, root: {tmp_path}}}]\n", *certificates.m0_args())
    context = certificates.client_context()
    status, headers, body = tls.https_request(server.ports[1], context, "/static/big.bin")
    assert status == 200 and int(headers["content-length"]) == len(data)
    assert hashlib.sha256(body).digest() == hashlib.sha256(data).digest()
    first, last = 1_000_000, 3_999_999
    status, headers, body = tls.https_request(server.ports[1], context, "/static/big.bin",
                                              headers={"Range": f"bytes={first}-{last}"})
    assert status == 206
    assert headers["content-range"] == f"bytes {first}-{last}/{len(data)}"
    assert body == data[first:last + 1]


# --- client certificates --------------------------------------------------------

def test_client_auth_required(wsgi_server, certificates):
    server = tls.start_with_client_auth(wsgi_server, certificates, "required", APP, "")
    env = environ_of(server.ports[1], certificates.client_context(certificates.client))
    assert env["SSL_CLIENT_VERIFY"] == "SUCCESS"
    assert env["SSL_CLIENT_S_DN"] == tls.subject_rfc4514(certificates.client)
    assert env["SSL_CLIENT_CERT"] == tls.leaf_pem(certificates.client)
    # No certificate, or one from a CA m0 does not trust: no HTTP at all.
    tls.assert_refused(server.ports[1], certificates.client_context())
    tls.assert_refused(server.ports[1], certificates.client_context(certificates.stranger))


def test_client_auth_optional(wsgi_server, certificates):
    server = tls.start_with_client_auth(wsgi_server, certificates, "optional", APP, "")
    env = environ_of(server.ports[1], certificates.client_context())
    assert env["SSL_CLIENT_VERIFY"] == "NONE" and "SSL_CLIENT_S_DN" not in env
    env = environ_of(server.ports[1], certificates.client_context(certificates.client))
    assert env["SSL_CLIENT_VERIFY"] == "SUCCESS"
    # Let through, the app decides: it learns why the certificate failed.
    env = environ_of(server.ports[1], certificates.client_context(certificates.stranger))
    assert env["SSL_CLIENT_VERIFY"].startswith("FAILED:") and len(env["SSL_CLIENT_VERIFY"]) > len("FAILED:")
    assert env["SSL_CLIENT_S_DN"] == tls.subject_rfc4514(certificates.stranger)
    assert env["SSL_CLIENT_CERT"] == tls.leaf_pem(certificates.stranger)
