"""Behind a proxy: Forwarded / X-Forwarded-For / X-Forwarded-Proto from a
peer in server.forwarded_allow_ips name the client and the scheme that a
WSGI app (REMOTE_ADDR, wsgi.url_scheme, HTTPS, SERVER_NAME/PORT), an ASGI app
(client, scheme) and the access log see; from any other peer they are
ignored. The other peer is a real connection from 127.0.0.2."""
import json
import re

import m0test
from proxy_support import VENV, asgi_config, ask, needs_python, wsgi_config

pytestmark = needs_python


def test_loopback_is_trusted_by_default(m0_server):
    server = m0_server(wsgi_config(), env=VENV)
    env = ask(server.port, {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https",
                            "Host": "app.example:8443"})
    assert env["REMOTE_ADDR"] == "203.0.113.9"
    assert env["REMOTE_PORT"] is None  # the proxy did not say
    assert env["wsgi.url_scheme"] == "https"
    assert env["HTTPS"] == "on"
    # The client reached app.example:8443 over TLS, not m0's socket.
    assert (env["SERVER_NAME"], env["SERVER_PORT"]) == ("app.example", "8443")
    env = ask(server.port, {"X-Forwarded-Proto": "https"})
    assert (env["SERVER_NAME"], env["SERVER_PORT"]) == ("app.example", "443")
    # No header: the socket's peer, plain http.
    env = ask(server.port)
    assert env["REMOTE_ADDR"] == "127.0.0.1" and env["REMOTE_PORT"] not in (None, "0")
    assert env["wsgi.url_scheme"] == "http" and env["HTTPS"] is None
    assert env["SERVER_NAME"] == "127.0.0.1" and int(env["SERVER_PORT"]) == server.port


def test_headers_from_an_untrusted_peer_are_ignored(m0_server):
    server = m0_server(wsgi_config('  forwarded_allow_ips: ["127.0.0.1"]\n'), env=VENV)
    spoof = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https",
             "Forwarded": "for=198.51.100.7;proto=https"}
    env = ask(server.port, spoof, source="127.0.0.2")
    assert env["REMOTE_ADDR"] == "127.0.0.2"
    assert env["wsgi.url_scheme"] == "http" and env["HTTPS"] is None
    # The same headers from the trusted address are believed (Forwarded wins).
    env = ask(server.port, spoof, source="127.0.0.1")
    assert env["REMOTE_ADDR"] == "198.51.100.7"
    assert env["wsgi.url_scheme"] == "https"


def test_an_empty_list_trusts_nobody_and_star_trusts_everyone(m0_server):
    nobody = m0_server(wsgi_config("  forwarded_allow_ips: []\n"), env=VENV)
    assert ask(nobody.port, {"X-Forwarded-For": "203.0.113.9"})["REMOTE_ADDR"] == "127.0.0.1"
    everyone = m0_server(wsgi_config('  forwarded_allow_ips: "*"\n'), env=VENV)
    assert ask(everyone.port, {"X-Forwarded-For": "203.0.113.9"}, source="127.0.0.2")["REMOTE_ADDR"] == "203.0.113.9"


def test_several_hops_give_the_rightmost_untrusted_address(m0_server):
    server = m0_server(wsgi_config('  forwarded_allow_ips: [127.0.0.0/8, 10.0.0.0/8]\n'), env=VENV)
    # The client wrote 1.1.1.1 itself; the proxies 10.0.0.2 and m0's peer appended the rest.
    env = ask(server.port, {"X-Forwarded-For": "1.1.1.1, 203.0.113.9, 10.0.0.2"})
    assert env["REMOTE_ADDR"] == "203.0.113.9"
    env = ask(server.port, {"Forwarded": 'for=1.1.1.1, for="[2001:db8::9]:4711";proto=https, for=10.0.0.2'})
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"], env["wsgi.url_scheme"]) == ("2001:db8::9", "4711", "https")


def test_malformed_headers_keep_the_peer_and_are_counted(m0_server):
    server = m0_server(wsgi_config(extra="log: {level: debug}\nmetrics: {listen: '127.0.0.1:0'}\n"), env=VENV)
    for headers in ({"X-Forwarded-For": "203.0.113.9, not-an-address"},
                    {"Forwarded": "for=203.0.113.9;for=198.51.100.1"},
                    {"X-Forwarded-Proto": "gopher"}):
        env = ask(server.port, headers)
        assert env["REMOTE_ADDR"] == "127.0.0.1", headers
        assert env["wsgi.url_scheme"] == "http", headers
    server.wait_for_log("ignored forwarding headers: X-Forwarded-For: 'not-an-address' is not an IP address")
    server.wait_for_log("ignored forwarding headers: Forwarded: parameter 'for' twice in one element")
    metrics_port = int(re.search(r"metrics: /metrics and /status.json on http://127.0.0.1:(\d+)",
                                 server.output()).group(1))
    status = json.loads(m0test.request(metrics_port, path="/status.json").body)
    assert status["forwarded_headers_ignored"] == 3


def test_the_access_log_names_the_forwarded_client(m0_server):
    server = m0_server(wsgi_config(extra="log: {access: '%(h)s %(s)s'}\n"), env=VENV)
    ask(server.port, {"X-Forwarded-For": "203.0.113.9"})
    ask(server.port, {"X-Forwarded-For": "203.0.113.10"}, source="127.0.0.2")  # 127.0.0.2 is loopback too
    assert server.stop() == 0
    lines = server.output().splitlines()
    assert "203.0.113.9 200" in lines and "203.0.113.10 200" in lines, server.output()


def test_asgi_sees_the_client_and_scheme(m0_server):
    server = m0_server(asgi_config(), env=VENV)
    scope = ask(server.port, {"Forwarded": 'for="[2001:db8::9]:4711";proto=https'})
    assert scope["client"] == ["2001:db8::9", 4711]
    assert scope["scheme"] == "https"
    scope = ask(server.port, {"X-Forwarded-For": "203.0.113.9"})
    assert scope["client"] == ["203.0.113.9", 0]
    assert scope["scheme"] == "http"
    untrusting = m0_server(asgi_config("  forwarded_allow_ips: 10.0.0.0/8\n"), env=VENV)
    scope = ask(untrusting.port, {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"})
    assert scope["client"][0] == "127.0.0.1" and scope["scheme"] == "http"
