"""An ASGI app behind a listener marked `tls`: the scope's scheme (https,
wss) and the TLS extension (asgiref specs/tls.rst) in scope["extensions"] of
http and websocket scopes, and neither on the plain listener beside it; the
client's certificate in it with tls.client_auth required and optional.
Certificates are made at test time (support/tls.py)."""
import json
import ssl

import pytest

import m0test
from conftest import asgi_config, needs_asgi
from support import tls
from support.websocket_client import recv, ws_connect

pytestmark = needs_asgi

SCOPE_ECHO = asgi_config("asgi_apps:scope_echo")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return tls.Certificates(str(tmp_path_factory.mktemp("tls")))


def tls_scope(server, context):
    """The scope of a request over TLS to asgi_apps:scope_echo."""
    status, _, body = tls.https_request(server.ports[1], context, "/scope")
    assert status == 200, body
    return json.loads(body)


def tls_extension(server, context):
    return tls_scope(server, context)["extensions"]["tls"]


def test_http_scope(m0_server, certificates):
    server = m0_server(SCOPE_ECHO, *certificates.m0_args())
    context = certificates.client_context()
    scope = tls_scope(server, context)
    assert scope["scheme"] == "https"
    extension = scope["extensions"]["tls"]
    assert sorted(extension) == ["cipher_suite", "client_cert_chain", "client_cert_error", "client_cert_name",
                                 "server_cert", "tls_version"]
    assert extension["server_cert"] == certificates.server_pem
    assert (extension["client_cert_chain"], extension["client_cert_name"], extension["client_cert_error"]) == \
        ([], None, None)
    # The same client context agrees on the same again.
    _, protocol, suite = tls.negotiated(server.ports[1], context)
    assert extension["tls_version"] == {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}[protocol]
    assert extension["cipher_suite"] == suite
    assert {"http.response.pathsend", "http.response.trailers"} <= scope["extensions"].keys()
    # A client that speaks TLS 1.2 at most.
    tls12 = certificates.client_context(maximum_version=ssl.TLSVersion.TLSv1_2)
    extension = tls_extension(server, tls12)
    assert (extension["tls_version"], extension["cipher_suite"]) == (0x0303, tls.negotiated(server.ports[1], tls12)[2])
    # The plain listener of the same server: no TLS, no extension.
    plain = json.loads(m0test.request(server.port, path="/scope").body)
    assert plain["scheme"] == "http" and "tls" not in plain["extensions"]


def test_websocket_over_wss(m0_server, certificates):
    server = m0_server(asgi_config("ws_apps:echo"), *certificates.m0_args())
    with ws_connect(server, "/ws", port=server.ports[1], ssl=certificates.client_context(), compression=None) as ws:
        scope = json.loads(recv(ws))  # ws_apps.echo sends its scope first
        ws.send("over tls")
        assert recv(ws) == "over tls"
        # Larger than a TLS record (16 KiB): the frame spans several.
        payload = bytes(range(256)) * 1024
        ws.send(payload)
        assert recv(ws) == payload
    assert scope["scheme"] == "wss"
    extension = scope["extensions"]["tls"]
    assert extension["server_cert"] == certificates.server_pem and extension["tls_version"] in (0x0303, 0x0304)
    assert "websocket.http.response" in scope["extensions"]
    with ws_connect(server, "/ws", compression=None) as ws:
        scope = json.loads(recv(ws))
    assert scope["scheme"] == "ws" and "tls" not in scope["extensions"]


# --- client certificates --------------------------------------------------------

def test_client_auth_required(m0_server, certificates):
    server = tls.start_with_client_auth(m0_server, certificates, "required", SCOPE_ECHO)
    extension = tls_extension(server, certificates.client_context(certificates.client))
    # The client's own first; what follows is as it sent it (OpenSSL completes
    # a client's chain from its trust store: here with the CA).
    assert extension["client_cert_chain"][0] == tls.leaf_pem(certificates.client)
    assert extension["client_cert_name"] == tls.subject_rfc4514(certificates.client)
    assert extension["client_cert_error"] is None
    tls.assert_refused(server.ports[1], certificates.client_context())
    tls.assert_refused(server.ports[1], certificates.client_context(certificates.stranger))


def test_client_auth_optional(m0_server, certificates):
    server = tls.start_with_client_auth(m0_server, certificates, "optional", SCOPE_ECHO)
    extension = tls_extension(server, certificates.client_context())
    assert (extension["client_cert_chain"], extension["client_cert_name"], extension["client_cert_error"]) == \
        ([], None, None)
    # Let through, the app decides: it learns why the certificate failed.
    extension = tls_extension(server, certificates.client_context(certificates.stranger))
    assert isinstance(extension["client_cert_error"], str) and extension["client_cert_error"]
    assert extension["client_cert_chain"][0] == tls.leaf_pem(certificates.stranger)
    assert extension["client_cert_name"] == tls.subject_rfc4514(certificates.stranger)
