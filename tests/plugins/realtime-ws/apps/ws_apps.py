"""Plain WSGI views of the WebSocket hold tests: /ws holds the connection as
a WebSocket (environ["m0.hold"](..., "ws", on_message=...)) and returns; the
handler below answers the client's commands. Every other path (/publish,
/publish-many) is hold_apps'."""
import threading

import m0
from hold_apps import app as hold_app
from hold_apps import query

# The order in which on_message saw each connection's messages, by conn.id.
seen = {}
# "block" holds on_message until GET /unblock (a slow application).
unblock = threading.Event()


def on_message(conn, message):
    if isinstance(message, bytes):
        conn.send(message)  # binary back as binary
        return
    command, _, arg = message.partition(":")
    if command == "raise":
        raise RuntimeError("on_message failed on purpose")
    if command == "id":
        conn.send(str(conn.id))
    elif command == "sub":
        conn.subscribe(arg)
        conn.send(f"subscribed {arg}")
    elif command == "unsub":
        conn.unsubscribe(arg)
        conn.send(f"unsubscribed {arg}")
    elif command == "close":
        conn.close(int(arg), "asked to")
    elif command == "thread":
        # Every method from a thread that is not running on_message.
        def work():
            conn.subscribe("from-thread")
            conn.send(f"thread {conn.id}")
            m0.publish("from-thread", "published to the thread's channel")
            conn.unsubscribe("from-thread")
            m0.publish("from-thread", "not after unsubscribe")
            conn.send("thread done")
            conn.close(4000, "thread closed")
        threading.Thread(target=work).start()
    elif command == "block":
        unblock.wait(timeout=60)
    elif command == "seq":
        seen.setdefault(conn.id, []).append(int(arg.split(":")[0]))
        conn.send(message)
    elif command == "note":  # as seq, without the echo
        seen.setdefault(conn.id, []).append(int(arg.split(":")[0]))
    elif command == "seen":
        conn.send(",".join(map(str, seen.get(conn.id, []))))
    else:
        conn.send(message)


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    if path == "/ws":
        channels = [c for c in q.get("channels", "news").split(",") if c]
        try:
            environ["m0.hold"](channels, "ws", on_message=None if "mute" in q else on_message)
        except ValueError as e:
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [f"{e}".encode()]
        print(f"held {q.get('tag', '')}", flush=True)
        start_response("200 OK", [("Content-Type", "text/html"), ("Set-Cookie", "room=1")])
        return [b"not sent"]
    if path == "/echo":
        # The Autobahn endpoint: every message back as it came.
        environ["m0.hold"]([], "ws", on_message=lambda conn, message: conn.send(message))
        start_response("200 OK", [])
        return []
    if path == "/ws-bad-args":
        errors = []
        for kwargs in ({"mode": "sse", "on_message": on_message}, {"mode": "ws", "on_message": 1}):
            try:
                environ["m0.hold"]("news", kwargs["mode"], on_message=kwargs["on_message"])
                errors.append("accepted")
            except (TypeError, ValueError) as e:
                errors.append(f"{type(e).__name__}: {e}")
        start_response("200 OK", [("Content-Type", "text/plain")])
        return ["|".join(errors).encode()]
    if path == "/unblock":
        unblock.set()
        start_response("204 No Content", [])
        return []
    return hold_app(environ, start_response)
