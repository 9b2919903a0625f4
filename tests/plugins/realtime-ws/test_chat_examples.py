"""The chat examples end to end through their shipped configs: the Flask
(examples/flask/chat_app.py, configs/flask-realtime.yaml) and Django
(examples/django/chat, configs/django-realtime.yaml) rooms, synchronous
views only. Real clients: a raw SSE reader, the `websockets` client, plain
HTTP POSTs (with Django's CSRF cookie and header)."""
import json
import os
import re
import sys
from urllib.parse import urlencode

import pytest
from websockets.sync.client import connect

import m0test
from support.sse_stream import StreamReader

# The embedded interpreter runs in the test venv (Flask and Django are there).
VENV = {"VIRTUAL_ENV": sys.prefix}

# config, the chat's URL prefix
EXAMPLES = {
    "flask": ("flask-realtime.yaml", ""),
    "django": ("django-realtime.yaml", "/chat"),
}


class Chat:
    """One example served by m0: its URLs, and the CSRF token Django wants."""

    def __init__(self, server, prefix):
        self.server, self.prefix, self.cookie = server, prefix, None

    def page(self, room="lobby"):
        resp = m0test.request(self.server.port, "GET", f"{self.prefix}/?room={room}")
        cookie = resp.header("Set-Cookie")
        if cookie and cookie.startswith("csrftoken="):
            self.cookie = cookie.split(";")[0].split("=", 1)[1]
        return resp

    def say(self, text, room="lobby"):
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if self.cookie:
            headers.update({"Cookie": f"csrftoken={self.cookie}", "X-CSRFToken": self.cookie})
        return m0test.request(self.server.port, "POST", f"{self.prefix}/say", headers=headers,
                              body=urlencode({"room": room, "text": text}).encode())

    def events(self, room="lobby"):
        """A held SSE stream of `room`, its 200 head read (so it is attached)."""
        sock = self.server.connect(timeout=20)
        sock.sendall(f"GET {self.prefix}/events?room={room} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        reader = StreamReader(sock, timeout=20)
        status, headers = reader.head()
        assert status == 200 and ("content-type", "text/event-stream") in headers, (status, headers)
        return sock, reader

    def websocket(self, room="lobby"):
        return connect(f"ws://127.0.0.1:{self.server.port}{self.prefix}/ws?room={room}",
                       open_timeout=m0test.scaled(10), close_timeout=m0test.scaled(10), ping_interval=None)


@pytest.fixture(params=sorted(EXAMPLES))
def chat(request, m0_server):
    config, prefix = EXAMPLES[request.param]
    server = m0_server(os.path.join(m0test.SOURCE_DIR, "configs", config), env=VENV)
    return Chat(server, prefix)


def line(room, text):
    return json.dumps({"room": room, "text": text})


def test_a_post_and_a_websocket_message_reach_sse_and_websocket_clients(chat):
    page = chat.page()
    assert page.status == 200 and b"Room lobby" in page.body
    sock, sse = chat.events()
    with sock, chat.websocket() as ws:
        assert chat.say("hello from a POST").status == 204
        assert sse.event() == {"event": "message", "data": line("lobby", "hello from a POST")}
        assert ws.recv(timeout=m0test.scaled(10)) == line("lobby", "hello from a POST")
        ws.send("hello from the WebSocket")
        assert ws.recv(timeout=m0test.scaled(10)) == line("lobby", "hello from the WebSocket")
        assert sse.event() == {"event": "message", "data": line("lobby", "hello from the WebSocket")}


def test_rooms_are_separate(chat):
    chat.page()
    sock, lobby = chat.events("lobby")
    with sock, chat.websocket("kitchen") as kitchen:
        assert chat.say("for the lobby only", room="lobby").status == 204
        assert chat.say("for the kitchen", room="kitchen").status == 204
        assert kitchen.recv(timeout=m0test.scaled(10)) == line("kitchen", "for the kitchen")
        assert lobby.event()["data"] == line("lobby", "for the lobby only")
        kitchen.send("kitchen talk")
        assert kitchen.recv(timeout=m0test.scaled(10)) == line("kitchen", "kitchen talk")


def test_bad_input_gets_a_clear_400_and_nothing_is_published(chat):
    chat.page()
    sock, sse = chat.events()
    with sock:
        empty = chat.say("   ")
        assert empty.status == 400 and b"text: 1 to 1000 characters" in empty.body
        assert chat.say("x" * 1001).status == 400
        bad_room = chat.say("hi", room="no/slashes")
        assert bad_room.status == 400 and b"room:" in bad_room.body
        # The stream endpoint asked without a WebSocket handshake: the view's 400.
        plain = m0test.request(chat.server.port, "GET", f"{chat.prefix}/ws?room=lobby")
        assert plain.status == 400 and re.search(rb"not a WebSocket handshake", plain.body), plain.body
        assert chat.say("the first accepted line").status == 204
        assert sse.event()["data"] == line("lobby", "the first accepted line")


def test_django_refuses_a_post_without_its_csrf_token(m0_server):
    server = m0_server(os.path.join(m0test.SOURCE_DIR, "configs", "django-realtime.yaml"), env=VENV)
    chat = Chat(server, "/chat")
    assert chat.say("forged").status == 403
