"""HAProxy (Debian's haproxy, started by the test on a listening socket the
test made) in front of m0: `send-proxy` and `send-proxy-v2` to a listener
marked `proxy`, and `option forwardfor` in HTTP mode to a plain one. The
client connects from 127.0.0.3 so that its address differs from HAProxy's."""
import json
import shutil
import socket
import subprocess

import pytest

import m0test
from proxy_support import VENV, ask, connect, needs_python, request_bytes, wsgi_config

pytestmark = [needs_python,
              pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed")]

CONFIG = """
global
    maxconn 100
defaults
    mode {mode}
    timeout connect 10s
    timeout client 30s
    timeout server 30s
frontend front
    bind fd@{fd}
    default_backend m0
backend m0
{options}
    server m0 127.0.0.1:{port}{server_options}
"""


@pytest.fixture
def haproxy(tmp_path):
    """haproxy(mode, m0_port, server_options, options) -> the port HAProxy listens on."""
    started = []

    def start(mode, port, server_options="", options=""):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)  # connections wait in the backlog until HAProxy accepts
        config = tmp_path / f"haproxy-{len(started)}.cfg"
        config.write_text(CONFIG.format(mode=mode, fd=listener.fileno(), port=port,
                                        server_options=server_options, options=options))
        proc = subprocess.Popen(["haproxy", "-db", "-f", str(config)], pass_fds=[listener.fileno()],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        started.append((proc, listener))
        return listener.getsockname()[1]

    yield start
    for proc, listener in started:
        proc.terminate()
        try:
            proc.wait(timeout=m0test.scaled(10))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        listener.close()


@pytest.mark.parametrize("send_proxy", ["send-proxy", "send-proxy-v2"])
def test_haproxy_send_proxy(m0_server, haproxy, send_proxy):
    server = m0_server(wsgi_config('  forwarded_allow_ips: []\n'), "--listen", "127.0.0.1:0 proxy", env=VENV)
    front = haproxy("tcp", server.ports[1], " " + send_proxy)
    with connect(front, "127.0.0.3") as sock:
        sock.sendall(request_bytes({"Connection": "close"}))
        env = json.loads(m0test.ResponseReader(sock).read().body)
        client_port = sock.getsockname()[1]
    # m0's peer is HAProxy at 127.0.0.1; the app sees the client's socket.
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("127.0.0.3", str(client_port))
    assert env["SERVER_PORT"] == str(front)  # the address the client connected to


def test_haproxy_forwardfor_in_http_mode(m0_server, haproxy):
    server = m0_server(wsgi_config(), env=VENV)
    front = haproxy("http", server.port, options="    option forwardfor\n"
                                               "    http-request set-header X-Forwarded-Proto https")
    env = ask(front, source="127.0.0.3")
    assert env["REMOTE_ADDR"] == "127.0.0.3"
    assert env["wsgi.url_scheme"] == "https"
