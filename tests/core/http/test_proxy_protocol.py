"""PROXY protocol on a listener marked `proxy` (`--listen "HOST:PORT proxy"`):
the header's addresses become the connection's client and server for a WSGI
app and the access log; a missing, malformed or late header closes the
connection without an HTTP answer and is counted. Raw bytes here; HAProxy
sending v1 and v2 in test_haproxy.py."""
import json
import re
import socket
import struct

import m0test
from proxy_support import VENV, connect, needs_python, request_bytes, wsgi_config

pytestmark = needs_python

PROXY_LISTEN = ("--listen", "127.0.0.1:0 proxy")
V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


def v2_header(command=0x21, family=0x11, addresses=None, tlvs=b""):
    if addresses is None:  # 192.0.2.1:4711 -> 198.51.100.2:443
        addresses = socket.inet_aton("192.0.2.1") + socket.inet_aton("198.51.100.2") + struct.pack("!HH", 4711, 443)
    rest = addresses + tlvs
    return V2_SIGNATURE + bytes([command, family]) + struct.pack("!H", len(rest)) + rest


def start(m0_server, server_extra="", extra=""):
    server = m0_server(wsgi_config(server_extra, extra), *PROXY_LISTEN, env=VENV)
    assert len(server.ports) == 2
    return server


def ask_raw(port, data, source="127.0.0.1"):
    """Sends `data` (a PROXY header and a request); the app's JSON answer."""
    with connect(port, source) as sock:
        sock.sendall(data)
        response = m0test.ResponseReader(sock).read()
    assert response.status == 200, response.body
    return json.loads(response.body)


def refused(port, data):
    """Sends `data`; asserts m0 closes the connection without a byte."""
    with connect(port) as sock:
        sock.sendall(data)
        assert m0test.recv_until_closed(sock) == b""


def test_v1_addresses_become_the_client_and_server(m0_server):
    server = start(m0_server)
    proxy_port = server.ports[1]
    env = ask_raw(proxy_port, b"PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\r\n" + request_bytes())
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("192.0.2.1", "4711")
    assert (env["SERVER_NAME"], env["SERVER_PORT"]) == ("198.51.100.2", "443")
    env = ask_raw(proxy_port, b"PROXY TCP6 2001:db8::1 2001:db8::2 5000 8080\r\n" + request_bytes())
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("2001:db8::1", "5000")
    # UNKNOWN: the socket's own addresses.
    env = ask_raw(proxy_port, b"PROXY UNKNOWN\r\n" + request_bytes(), source="127.0.0.3")
    assert env["REMOTE_ADDR"] == "127.0.0.3"
    # The plain listener beside it takes no header.
    env = ask_raw(server.ports[0], request_bytes(), source="127.0.0.3")
    assert env["REMOTE_ADDR"] == "127.0.0.3"


def test_v2_addresses_local_and_ssl(m0_server):
    server = start(m0_server)
    proxy_port = server.ports[1]
    env = ask_raw(proxy_port, v2_header() + request_bytes())
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"], env["SERVER_PORT"]) == ("192.0.2.1", "4711", "443")
    assert env["wsgi.url_scheme"] == "http"
    v6 = socket.inet_pton(socket.AF_INET6, "2001:db8::1") + socket.inet_pton(socket.AF_INET6, "::1") + \
        struct.pack("!HH", 80, 8080)
    env = ask_raw(proxy_port, v2_header(family=0x21, addresses=v6) + request_bytes())
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("2001:db8::1", "80")
    # LOCAL (a health check of the proxy's own): the socket's addresses.
    env = ask_raw(proxy_port, v2_header(command=0x20) + request_bytes(), source="127.0.0.3")
    assert env["REMOTE_ADDR"] == "127.0.0.3"
    # TLVs skipped; PP2_TYPE_SSL with the client-SSL flag: the client used TLS.
    ssl_tlv = b"\x20\x00\x05\x01\x00\x00\x00\x00"
    env = ask_raw(proxy_port, v2_header(tlvs=b"\x01\x00\x02h2" + ssl_tlv) + request_bytes())
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"], env["HTTPS"]) == ("192.0.2.1", "https", "on")


def test_the_header_may_arrive_in_pieces_and_holds_for_the_connection(m0_server):
    server = start(m0_server)
    with connect(server.ports[1]) as sock:
        header = b"PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\r\n"
        for i in range(len(header)):
            sock.sendall(header[i:i + 1])
            server.wait_until_read(sock)
        reader = m0test.ResponseReader(sock)
        for _ in range(2):  # keep-alive: every request of the connection
            sock.sendall(request_bytes())
            assert json.loads(reader.read().body)["REMOTE_ADDR"] == "192.0.2.1"


def test_missing_and_malformed_headers_close_without_an_answer(m0_server):
    server = start(m0_server, extra="metrics: {listen: '127.0.0.1:0'}\n")
    proxy_port = server.ports[1]
    bad = [
        request_bytes(),                                              # no header at all
        b"PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\n" + request_bytes(),  # bare LF
        b"PROXY TCP4 192.0.2.1 198.51.100.2 99999 443\r\n" + request_bytes(),
        b"PROXY TCP4 2001:db8::1 198.51.100.2 4711 443\r\n",
        b"PROXY UNKNOWN " + b"x" * 100 + b"\r\n",                   # over 107 bytes
        v2_header(command=0x22),
        v2_header(family=0x12),                                       # UDP
        v2_header(tlvs=b"\x01\x00\x09h2"),                            # a TLV past the end
    ]
    for data in bad:
        refused(proxy_port, data)
    server.wait_for_log(re.compile(r"refused connection: PROXY v1 line (ends in|holds) a bare LF"))
    server.wait_for_log(re.compile(r"refused connection: not a PROXY protocol header"))
    metrics_port = int(re.search(r"metrics: /metrics and /status.json on http://127.0.0.1:(\d+)",
                                 server.output()).group(1))
    status = json.loads(m0test.request(metrics_port, path="/status.json").body)
    assert status["proxy_headers_refused"] == len(bad)
    # Nothing was logged as a request: the peer is a proxy, not a client.
    assert " 400 " not in server.output()


def test_a_late_header_is_cut_at_the_header_timeout_without_408(m0_server):
    server = start(m0_server, extra="http: {header_timeout: 1s}\n")
    with connect(server.ports[1]) as sock:
        sock.sendall(b"PROXY TCP4 192.0.2.1")
        assert m0test.recv_until_closed(sock, timeout=15) == b""
    server.wait_for_log("refused connection: no complete PROXY protocol header within http.header_timeout")


def test_forwarding_headers_apply_against_the_proxied_address(m0_server):
    # The PROXY header's source is the peer that forwarded_allow_ips judges.
    server = start(m0_server, '  forwarded_allow_ips: [10.0.0.0/8]\n')
    xff = request_bytes({"X-Forwarded-For": "203.0.113.9"})
    env = ask_raw(server.ports[1], b"PROXY TCP4 10.1.2.3 198.51.100.2 4711 443\r\n" + xff)
    assert env["REMOTE_ADDR"] == "203.0.113.9"
    env = ask_raw(server.ports[1], b"PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\r\n" + xff)
    assert env["REMOTE_ADDR"] == "192.0.2.1"
