"""The whole environ an application sees, key by key, for both executors:
on a connection's first request, on the requests after it (which start from
the connection's environ template), when its headers or request line change,
and across connections, so that nothing cached for one connection or one
request reaches another."""
import json
import socket

import m0test

BROWSER = [("Host", "127.0.0.1:8000"),
           ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
           ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
           ("Accept-Language", "en-US,en;q=0.5")]


def expected(server, sock, method="GET", target="/", headers=BROWSER, body=b"", version="HTTP/1.1",
             remote=None):
    """The environ PEP 3333 and plugins/frontend-wsgi/README.md promise."""
    path, _, query = target.partition("?")
    client = sock.getsockname()
    env = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
        "RAW_URI": target, "SERVER_PROTOCOL": version,
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": str(server.port),
        "REMOTE_ADDR": remote or client[0], "REMOTE_PORT": str(client[1]),
        "SERVER_SOFTWARE": env_software(server),
        "wsgi.version": [1, 0], "wsgi.url_scheme": "http", "wsgi.input": "<wsgi_input>",
        "wsgi.errors": "<log_stream>", "wsgi.multithread": True, "wsgi.multiprocess": False,
        "wsgi.run_once": False, "wsgi.input_terminated": True, "wsgi.file_wrapper": "<type>",
        # The request deadline (server.request_timeout, on by default): how a
        # view extends or lifts its own.
        "m0.request_timeout": "<builtin_function_or_method>",
        "<body>": body.decode("latin-1"),
    }
    if remote and remote != client[0]:
        del env["REMOTE_PORT"]  # a proxy that gives no port
    for name, value in headers:
        if "_" in name:
            continue
        key = name.upper().replace("-", "_")
        if key == "CONTENT_LENGTH":
            continue
        if key != "CONTENT_TYPE":
            key = "HTTP_" + key
        if key in env:
            env[key] += ("; " if key == "HTTP_COOKIE" else ",") + value
        else:
            env[key] = value
    if body:
        env["CONTENT_LENGTH"] = str(len(body))
    return env


def env_software(server):
    # The version is m0's own: read it from the first answer instead.
    return server.software


def ask(sock, reader, method="GET", target="/", headers=BROWSER, body=b"", version="HTTP/1.1"):
    head = f"{method} {target} {version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    if body:
        head += f"Content-Length: {len(body)}\r\n"
    sock.sendall(head.encode("latin-1") + b"\r\n" + body)
    r = reader.read()
    assert r.status == 200, r.body
    return json.loads(r.body)


def start(wsgi_server):
    server = wsgi_server(app="wsgi_apps:dump_environ")
    server.software = json.loads(m0test.request(server.port).body)["SERVER_SOFTWARE"]
    assert server.software.startswith("m0/")
    return server


def test_environ_is_whole_and_exact_on_every_request_of_a_connection(wsgi_server):
    server = start(wsgi_server)
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        # First request, then the same again (from the connection's template).
        for _ in range(3):
            assert ask(s, reader) == expected(server, s)
        # Another request line, same headers.
        assert ask(s, reader, "POST", "/a/b?x=1", body=b"hello") == expected(server, s, "POST", "/a/b?x=1",
                                                                              body=b"hello")
        assert ask(s, reader) == expected(server, s)
        # A header changed, one dropped, one added, one repeated.
        changed = [("Host", "127.0.0.1:8000"), ("Accept", "*/*"), ("X-Dup", "a"), ("Content-Type", "text/plain"),
                   ("X-Dup", "b"), ("Cookie", "a=1"), ("X_Spoof", "no"), ("Cookie", "b=2")]
        assert ask(s, reader, headers=changed) == expected(server, s, headers=changed)
        assert ask(s, reader, headers=changed) == expected(server, s, headers=changed)
        # Fewer headers than the template holds: none of its old ones remain.
        assert ask(s, reader, headers=[("Host", "h")]) == expected(server, s, headers=[("Host", "h")])
        assert ask(s, reader) == expected(server, s)


def test_http10_on_a_connection_that_spoke_http11(wsgi_server):
    server = start(wsgi_server)
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        assert ask(s, reader) == expected(server, s)
        keep = BROWSER + [("Connection", "keep-alive")]
        assert ask(s, reader, headers=keep, version="HTTP/1.0") == expected(server, s, headers=keep,
                                                                            version="HTTP/1.0")


def test_each_connection_sees_its_own_client(wsgi_server):
    server = start(wsgi_server)
    # Interleaved keep-alive connections, then new ones (new client ports)
    # and one from another loopback address: each request names its own
    # client, never one remembered from another connection.
    with server.connect() as a, server.connect() as b:
        ra, rb = m0test.ResponseReader(a), m0test.ResponseReader(b)
        for _ in range(2):
            assert ask(a, ra) == expected(server, a)
            assert ask(b, rb) == expected(server, b)
    for _ in range(3):
        with server.connect() as c:
            assert ask(c, m0test.ResponseReader(c)) == expected(server, c)
    with socket.socket() as d:
        d.settimeout(m0test.scaled(5))
        d.bind(("127.0.0.2", 0))
        d.connect(("127.0.0.1", server.port))
        env = ask(d, m0test.ResponseReader(d))
        assert env["REMOTE_ADDR"] == "127.0.0.2"
        assert env == expected(server, d)


def test_forwarded_client_changes_on_one_connection(wsgi_server):
    # m0 trusts forwarding headers from loopback by default: the client each
    # request names is the one in its environ, request by request.
    server = start(wsgi_server)
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for client in ["10.0.0.1", "10.0.0.2", "10.0.0.1"]:
            headers = BROWSER + [("X-Forwarded-For", client)]
            assert ask(s, reader, headers=headers) == expected(server, s, headers=headers, remote=client)
        assert ask(s, reader) == expected(server, s)


def test_large_headers_on_consecutive_requests(wsgi_server):
    # A template made from more than 4 KiB of header fields is not kept:
    # each such request is made afresh, and exactly.
    server = start(wsgi_server)
    big = BROWSER + [("Cookie", "session=" + "x" * 5000)]
    other = BROWSER + [("Cookie", "session=" + "y" * 5000)]
    with server.connect() as s:
        reader = m0test.ResponseReader(s)
        for headers in [big, big, BROWSER, big, other, BROWSER]:
            assert ask(s, reader, headers=headers) == expected(server, s, headers=headers)
