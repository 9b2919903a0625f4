"""TLS for end-to-end tests: certificates made at test time (trustme), a
server certificate that can be renewed from the same CA, the
arguments that make m0 serve them on a listener marked `tls`, and clients
that speak HTTPS to it with or without a certificate of their own."""
import http.client
import os
import socket
import ssl

import trustme
from cryptography import x509

import m0test

# A second listener beside the plain one the harness opens: Server.ports[1].
TLS_LISTEN = ("--listen", "127.0.0.1:0 tls")


class Certificates:
    """A CA, a server certificate for localhost and 127.0.0.1, a client
    certificate from the same CA and one from a CA m0 is not told about;
    the server's files and the CA bundle are written under `directory`."""

    def __init__(self, directory):
        self.ca = trustme.CA()
        self.server = self.ca.issue_cert("localhost", "127.0.0.1")
        self.client = self.ca.issue_cert("alice@example.com", common_name="alice")
        self.stranger = trustme.CA().issue_cert("mallory@example.com", common_name="mallory")
        self.cert_path = os.path.join(directory, "server.pem")
        self.key_path = os.path.join(directory, "server.key")
        self.ca_path = os.path.join(directory, "ca.pem")
        self.server.cert_chain_pems[0].write_to_path(self.cert_path)
        self.server.private_key_pem.write_to_path(self.key_path)
        self.ca.cert_pem.write_to_path(self.ca_path)

    def m0_args(self, client_auth=None):
        """m0's arguments for a TLS listener serving the server certificate;
        with `client_auth` ("optional", "required") it asks clients for a
        certificate from the CA."""
        args = [*TLS_LISTEN, "--set", f"tls.cert={self.cert_path}", "--set", f"tls.key={self.key_path}"]
        if client_auth:
            args += ["--set", f"tls.client_auth={client_auth}", "--set", f"tls.ca={self.ca_path}"]
        return args

    def client_context(self, cert=None, maximum_version=None):
        """A client context trusting the CA, presenting `cert` (a
        trustme.LeafCert: self.client, self.stranger) when given, speaking
        at most `maximum_version` (ssl.TLSVersion.TLSv1_2) when given."""
        context = ssl.create_default_context()
        if maximum_version is not None:
            context.maximum_version = maximum_version
        self.ca.configure_trust(context)
        if cert is not None:
            cert.configure_cert(context)
        return context

    @property
    def server_pem(self):
        return leaf_pem(self.server)


class ServerCertificate:
    def __init__(self, directory, ca=None, names=("localhost", "127.0.0.1"), key_type=trustme.KeyType.ECDSA):
        os.makedirs(directory, exist_ok=True)
        self.directory = str(directory)
        self.ca = ca or trustme.CA(key_type=key_type)
        self.leaf = self.ca.issue_cert(*names, key_type=key_type)
        self.cert = os.path.join(self.directory, "cert.pem")
        self.key = os.path.join(self.directory, "key.pem")
        self.ca_file = os.path.join(self.directory, "ca.pem")
        with open(self.cert, "wb") as f:
            for pem in self.leaf.cert_chain_pems:
                f.write(pem.bytes())
        self.leaf.private_key_pem.write_to_path(self.key)
        self.ca.cert_pem.write_to_path(self.ca_file)

    def leaf_der(self):
        return ssl.PEM_cert_to_DER_cert(self.leaf.cert_chain_pems[0].bytes().decode())

    def tls_section(self, **extra):
        """The YAML `tls:` section serving this certificate, with `extra` keys."""
        lines = ["tls:", f"  cert: {self.cert}", f"  key: {self.key}"]
        lines += [f"  {key}: {value}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

    def client_context(self):
        """A client context that trusts this CA and checks the name."""
        ctx = ssl.create_default_context()
        self.ca.configure_trust(ctx)
        return ctx


def leaf_pem(cert):
    """The PEM of a trustme.LeafCert's own certificate."""
    return cert.cert_chain_pems[0].bytes().decode()


def subject_rfc4514(cert):
    """A trustme.LeafCert's subject as RFC 4514 writes it."""
    return x509.load_pem_x509_certificate(cert.cert_chain_pems[0].bytes()).subject.rfc4514_string()


def start_with_client_auth(start, certificates, client_auth, *args, **kwargs):
    """Starts m0 through `start` (an m0_server-like factory; `args` first)
    asking clients for certificates from the CA."""
    return start(*args, *certificates.m0_args(client_auth), **kwargs)


class _Connection(http.client.HTTPSConnection):
    """An HTTPS connection to 127.0.0.1 that sends `server_name` as SNI (an
    IP address sends none) and checks the certificate against it."""

    def __init__(self, port, context, server_name, session=None):
        super().__init__("127.0.0.1", port, context=context, timeout=m0test.scaled(20))
        self.server_name = server_name
        self.session = session

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.server_name, session=self.session)


def https_connection(port, context, server_name="localhost", session=None):
    """An http.client connection; `session` (an earlier connection's
    sock.session) asks to resume that TLS session."""
    return _Connection(port, context, server_name, session)


def https_request(port, context, path="/", method="GET", body=None, headers=None, server_name="localhost"):
    """One request on a new connection: (status, headers as a dict with
    lower-cased names, body)."""
    connection = https_connection(port, context, server_name)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def get_resuming(port, context, path):
    """GET `path` on two connections, the second resuming the TLS session
    of the first: (the second's body, whether m0 resumed it). A TLS 1.3
    ticket comes after the handshake: the session is taken once the
    response was read."""
    session = None
    for _ in range(2):
        connection = https_connection(port, context, session=session)
        try:
            connection.request("GET", path)
            body = connection.getresponse().read()
            session, resumed = connection.sock.session, connection.sock.session_reused
        finally:
            connection.close()
    return body, resumed


def negotiated(port, context, server_name="localhost"):
    """What a client with `context` agrees on with m0: (OpenSSL's cipher
    name, protocol such as "TLSv1.3", the cipher suite's IANA number)."""
    with socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(10)) as raw:
        with context.wrap_socket(raw, server_hostname=server_name) as sock:
            name, protocol, _ = sock.cipher()
    # OpenSSL's cipher ids are 0x0300xxxx, xxxx the IANA number.
    suites = {cipher["name"]: cipher["id"] & 0xFFFF for cipher in context.get_ciphers()}
    return name, protocol, suites[name]


def assert_refused(port, context):
    """Asserts m0 ends the handshake of a client with `context` and no HTTP
    response comes. With TLS 1.3 the client's side of the handshake is over
    before the server has checked its certificate: the alert (or the reset)
    shows on the first read."""
    with socket.create_connection(("127.0.0.1", port), timeout=m0test.scaled(10)) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="localhost") as sock:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                data = sock.recv(65536)
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return
    assert data == b"", f"an HTTP response came: {data[:200]!r}"
