"""Shared by the behind-a-proxy tests: the apps that report who they think
the client is, configs serving them, and a client that can come from
another loopback address (127.0.0.2) than m0's trusted 127.0.0.1."""
import json
import os
import socket
import sys

import pytest

import m0test

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
PLUGINS = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins")
VENV = {"VIRTUAL_ENV": sys.prefix}

needs_python = pytest.mark.skipif(
    not os.path.exists(os.path.join(PLUGINS, "m0-frontend-wsgi.so")),
    reason="the Python plugins are not built (M0_BUILD_PYTHON=OFF)")


def wsgi_config(server_extra="", extra=""):
    return ("server:\n"
            f"{server_extra}"
            "frontend:\n"
            "  type: wsgi\n"
            "  app: client_apps:wsgi_app\n"
            f"  chdir: {APPS}\n"
            "executor: {type: inline}\n"
            f"{extra}")


def asgi_config(server_extra=""):
    return ("server:\n"
            f"{server_extra}"
            "frontend:\n"
            "  type: asgi\n"
            "  app: client_apps:asgi_app\n"
            f"  chdir: {APPS}\n"
            "executor: {type: asyncio}\n")


def connect(port, source="127.0.0.1"):
    """A connection to m0 from `source` (any 127.x address is local)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(m0test.scaled(5))
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def request_bytes(headers=None, path="/"):
    hdrs = {"Host": "app.example"}
    hdrs.update(headers or {})
    head = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    return head.encode("latin-1")


def ask(port, headers=None, source="127.0.0.1"):
    """One request from `source`; the app's JSON answer."""
    with connect(port, source) as sock:
        sock.sendall(request_bytes(dict({"Connection": "close"}, **(headers or {}))))
        response = m0test.ResponseReader(sock).read()
    assert response.status == 200, response.body
    return json.loads(response.body)
