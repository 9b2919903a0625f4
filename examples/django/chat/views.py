"""The chat room with synchronous Django views only: a page, a stream of the
room (Server-Sent Events or a WebSocket, both held by m0 with
request.META["m0.hold"]), and a CSRF-protected POST that publishes. The
view that holds returns an ordinary HttpResponse at once; m0 drops its body,
keeps its extra headers and holds the connection, and the pool thread serves
the next request. Needs a `realtime:` section (configs/django-realtime.yaml)."""
import json

from django.http import HttpResponse, HttpResponseBadRequest
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

MAX_TEXT = 1000  # characters in one chat message


def _room(value):
    room = (value or "lobby").strip()
    if not room or len(room) > 64 or not room.replace("-", "").isalnum():
        return None
    return room


def _channel(room):
    return f"chat:{room}"


def _say(room, text):
    import m0  # built into m0's interpreter: the rest of the project runs elsewhere too

    # A str: a WebSocket text frame, and one SSE event named `message`.
    m0.publish(_channel(room), json.dumps({"room": room, "text": text}), event="message")


def _no_realtime():
    return HttpResponse("the chat needs m0 with a realtime: section (configs/django-realtime.yaml)\n",
                        status=501, content_type="text/plain")


def _bad_room():
    return HttpResponseBadRequest("room: 1 to 64 letters, digits or '-'\n", content_type="text/plain")


@require_GET
def page(request):
    room = _room(request.GET.get("room"))
    if room is None:
        return _bad_room()
    get_token(request)  # sets the CSRF cookie the page's POST sends back
    return render(request, "chat/room.html", {"room": room})


@require_GET
def events(request):
    room = _room(request.GET.get("room"))
    if room is None:
        return _bad_room()
    if "m0.hold" not in request.META:
        return _no_realtime()
    request.META["m0.hold"](_channel(room), "sse")
    return HttpResponse()  # m0 answers with the stream


@require_GET
def websocket(request):
    room = _room(request.GET.get("room"))
    if room is None:
        return _bad_room()

    def on_message(conn, message):
        # Runs on the pool, in order for this connection.
        if isinstance(message, str) and message.strip():
            _say(room, message[:MAX_TEXT])

    if "m0.hold" not in request.META:
        return _no_realtime()
    try:
        request.META["m0.hold"](_channel(room), "ws", on_message=on_message)
    except ValueError as e:  # not a WebSocket handshake
        return HttpResponseBadRequest(f"{e}\n", content_type="text/plain")
    return HttpResponse()


@require_POST
def say(request):
    room = _room(request.POST.get("room"))
    if room is None:
        return _bad_room()
    text = request.POST.get("text", "").strip()
    if not text or len(text) > MAX_TEXT:
        return HttpResponseBadRequest(f"text: 1 to {MAX_TEXT} characters\n", content_type="text/plain")
    if "m0.hold" not in request.META:
        return _no_realtime()
    _say(room, text)
    return HttpResponse(status=204)
