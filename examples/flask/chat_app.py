"""The m0 chat example for Flask, with synchronous views only: a page, a
stream of the room (Server-Sent Events or a WebSocket, both held by m0 with
environ["m0.hold"]), and a POST that publishes. The view that holds returns
at once; m0 keeps the connection and the pool thread serves the next
request. Needs a `realtime:` section (configs/flask-realtime.yaml).

Served with `frontend.app: "chat_app:create_app()"`.
"""
import json

import m0
from flask import Flask, abort, render_template, request

MAX_TEXT = 1000  # characters in one chat message


def channel(room):
    return f"chat:{room}"


def clean_room(value):
    room = (value or "lobby").strip()
    if not room or len(room) > 64 or not room.replace("-", "").isalnum():
        abort(400, "room: 1 to 64 letters, digits or '-'")
    return room


def say(room, text):
    """Publishes one chat line to everyone in `room` (a str: a WebSocket
    text frame, one SSE event named `message`)."""
    m0.publish(channel(room), json.dumps({"room": room, "text": text}), event="message")


def create_app():
    app = Flask(__name__)

    @app.get("/")
    def page():
        return render_template("chat.html", room=clean_room(request.args.get("room")))

    @app.get("/events")
    def events():
        request.environ["m0.hold"](channel(clean_room(request.args.get("room"))), "sse")
        return ""  # m0 answers with the stream

    # Werkzeug routes a WebSocket handshake only to a rule declared with
    # websocket=True (anything else is its 400); the plain rule lets the
    # view itself tell a client that forgot the handshake.
    @app.get("/ws", websocket=True)
    @app.get("/ws", endpoint="websocket_plain")
    def websocket():
        room = clean_room(request.args.get("room"))

        def on_message(conn, message):
            # Runs on the pool, in order for this connection.
            if isinstance(message, str) and message.strip():
                say(room, message[:MAX_TEXT])

        try:
            request.environ["m0.hold"](channel(room), "ws", on_message=on_message)
        except ValueError as e:  # not a WebSocket handshake
            return str(e) + "\n", 400, {"Content-Type": "text/plain"}
        return ""

    @app.post("/say")
    def post():
        room = clean_room(request.form.get("room"))
        text = request.form.get("text", "").strip()
        if not text or len(text) > MAX_TEXT:
            return f"text: 1 to {MAX_TEXT} characters\n", 400, {"Content-Type": "text/plain"}
        say(room, text)
        return "", 204

    return app
