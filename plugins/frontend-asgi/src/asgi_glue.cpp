#include "asgi_glue.hpp"

#include <cstddef>
#include <iterator>

#include <m0/python/ref.hpp>

namespace m0::asgi {

namespace {

// `ch` is the C channel of one request (asgi_channel.cpp): it owns the
// exchange's side; this side owns the ASGI message protocol.
constexpr const char* glue_source = R"PY(
import asyncio
import collections
import traceback


class ClientDisconnected(OSError):
    """send() after the client went away (ASGI HTTP spec 2.4)."""


async def _serve(app, scope, ch):
    body_done = False  # the request body was handed out to its end
    pulled = None      # the future of a receive() awaiting a body piece

    async def receive():
        nonlocal body_done, pulled
        if not body_done:
            if not ch.streamed:
                body_done = True
                return {"type": "http.request", "body": ch.body(), "more_body": False}
            if pulled is not None and not pulled.done():
                raise RuntimeError("receive() called while another receive() awaits the request body")
            # Pulled from the connection only now: a slow app slows the
            # client down instead of m0 buffering the body.
            pulled = asyncio.get_running_loop().create_future()
            ch.pull(pulled)
            piece = await pulled
            if piece is not None:
                body, last = piece
                body_done = last
                return {"type": "http.request", "body": body, "more_body": not last}
            body_done = True
            return {"type": "http.disconnect"}
        fut = asyncio.get_running_loop().create_future()
        if ch.wait_disconnect(fut):
            await fut
        return {"type": "http.disconnect"}

    # The channel is send(): it takes http.response.start, .body and
    # .trailers itself and leaves the other types to _send_other.
    try:
        await app(scope, receive, ch)
    except asyncio.CancelledError:
        ch.fail(None)
        raise
    except BaseException:
        # A send() that raised because the client left is no error of the
        # app's (the spec asks servers not to log it).
        ch.fail(None if ch.gone else traceback.format_exc())
    else:
        # Returning without (finishing) a response is the app's error, but
        # not once its client is gone or half-closed (a long poll that saw
        # http.disconnect).
        if not ch.started:
            ch.fail(None if ch.disconnected else "the application returned without sending http.response.start")
        elif not ch.ended:
            ch.fail(None if ch.disconnected else "the application returned before the response was complete")
    finally:
        ch.end()


class _WebSocket:
    """The application's side of one WebSocket (the websocket scope).

    m0 pushes inbound messages here in order (_push, from the channel on
    the loop thread) and receive() hands them out; each one taken is
    reported to the channel (consumed), which keeps the queue bounded by
    pausing the socket. send() checks the order of the ASGI messages and
    passes them on to the channel."""

    def __init__(self, ch):
        self.ch = ch
        self.inbox = collections.deque()
        self.waiter = None
        self.connected = False  # websocket.connect was handed out
        self.closed = None      # (code, reason) once the connection ended
        # connecting -> open (accepted) or response (denial) -> closed
        self.state = "connecting"

    def _push(self, message, size):
        self.inbox.append((message, size))
        self._wake()

    def _gone(self, code, reason):
        if self.closed is None:
            self.closed = (code, reason)
        self._wake()

    def _wake(self):
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self):
        if not self.connected:
            self.connected = True
            return {"type": "websocket.connect"}
        while True:
            if self.inbox:
                message, size = self.inbox.popleft()
                self.ch.consumed(size)
                return message
            if self.closed is not None:
                return {"type": "websocket.disconnect", "code": self.closed[0], "reason": self.closed[1]}
            if self.waiter is not None:
                raise RuntimeError("receive() called while another receive() awaits")
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None

    async def send(self, message):
        kind = message["type"]
        state = self.state
        if state == "connecting":
            if kind == "websocket.accept":
                self.ch.accept(message.get("subprotocol"), message.get("headers") or ())
                self.state = "open"
            elif kind == "websocket.close":
                self.ch.deny()  # HTTP 403
                self._denied()
            elif kind == "websocket.http.response.start":
                self.ch.respond_start(message["status"], message.get("headers") or ())
                self.state = "response"
            else:
                raise RuntimeError(f"unexpected ASGI message type {kind!r} before websocket.accept")
        elif state == "response":
            if kind != "websocket.http.response.body":
                raise RuntimeError(f"unexpected ASGI message type {kind!r} after websocket.http.response.start")
            more = bool(message.get("more_body", False))
            self.ch.respond_body(message.get("body", b""), more)
            if not more:
                self._denied()
        elif kind == "websocket.send" or kind == "websocket.close":
            if state != "open" or self.closed is not None:
                raise ClientDisconnected("the WebSocket is closed")
            if kind == "websocket.close":
                self.state = "closed"
                reason = message.get("reason")
                self.ch.close(message.get("code", 1000), "" if reason is None else reason)
                return
            data, text = message.get("bytes"), message.get("text")
            if (data is None) == (text is None):
                raise ValueError("websocket.send needs exactly one of 'bytes' and 'text'")
            if self.ch.send(data if text is None else text):
                room = asyncio.get_running_loop().create_future()
                self.ch.wait_room(room)
                await room
        else:
            raise RuntimeError(f"unexpected ASGI message type {kind!r} on a websocket scope ({state})")

    def _denied(self):
        # No WebSocket came of it: receive() says so from now on.
        self.state = "closed"
        self._gone(1006, "")


async def _serve_ws(app, scope, ch):
    ws = _WebSocket(ch)
    ch.attach(ws)
    try:
        await app(scope, ws.receive, ws.send)
    except asyncio.CancelledError:
        ch.fail(None)
        raise
    except BaseException:
        # After the connection ended there is no one to answer: an app that
        # lets the disconnect (or the send() it made fail) escape is not logged.
        ch.fail(None if ws.closed is not None else traceback.format_exc())
    else:
        if ws.state == "connecting":
            ch.fail("the application returned without accepting or closing the WebSocket")
        elif ws.state == "response":
            ch.fail("the application returned before the websocket.http.response body was complete")
    finally:
        ch.end()


async def _await_room(fut):
    await fut


async def _send_other(ch, message):
    kind = message["type"]
    if kind == "http.response.pathsend":
        if not ch.started:
            raise RuntimeError("http.response.pathsend sent before http.response.start")
        if ch.ended:
            raise RuntimeError("http.response.pathsend sent after the response body")
        ch.pathsend(message["path"])
    else:
        raise RuntimeError(f"unexpected ASGI message type {kind!r} on an http scope")


def _settle(fut, value):
    if not fut.done():
        fut.set_result(value)


class Lifespan:
    """One loop's lifespan: startup() and shutdown() run on that loop."""

    def __init__(self, app, states):
        self.app = app
        self.states = states  # the app's lifespan state per loop, read by every request
        self.state = {}
        self.task = None

    async def startup(self):
        loop = asyncio.get_running_loop()
        self.started = loop.create_future()
        self.go_down = loop.create_future()
        self.stopped = loop.create_future()
        self.task = loop.create_task(self._main())
        outcome = await self.started
        if outcome[0] == "ok":
            self.states[loop] = self.state
        return outcome

    async def shutdown(self):
        if self.task is None or self.task.done():
            return ("ok", "")
        _settle(self.go_down, None)
        return await self.stopped

    async def _main(self):
        # The lifespan spec has versions of its own: 2.0 is its latest.
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        phase = "startup"

        async def receive():
            nonlocal phase
            if phase == "startup":
                phase = "running"
                return {"type": "lifespan.startup"}
            await self.go_down
            return {"type": "lifespan.shutdown"}

        async def send(message):
            kind = message["type"]
            if kind == "lifespan.startup.complete":
                _settle(self.started, ("ok", ""))
            elif kind == "lifespan.startup.failed":
                _settle(self.started, ("failed", str(message.get("message", ""))))
            elif kind == "lifespan.shutdown.complete":
                _settle(self.stopped, ("ok", ""))
            elif kind == "lifespan.shutdown.failed":
                _settle(self.stopped, ("failed", str(message.get("message", ""))))
            else:
                raise RuntimeError(f"unexpected ASGI message type {kind!r} on a lifespan scope")

        try:
            await self.app(scope, receive, send)
        except BaseException:
            text = traceback.format_exc()
            _settle(self.started, ("error", text))
            _settle(self.stopped, ("error", text))
        else:
            _settle(self.started, ("returned", ""))
            _settle(self.stopped, ("ok", ""))
)PY";

python::py_ref globals_;

// The helpers by glue_name, looked up once when the glue is compiled: a
// request calls _serve, and a lookup by a C string makes a str each time.
constexpr const char* glue_names[] = {"_serve", "_serve_ws", "_send_other", "_await_room", "ClientDisconnected",
                                      "Lifespan"};
static_assert(std::size(glue_names) == static_cast<std::size_t>(glue_name::count));
PyObject* helpers[std::size(glue_names)] = {};  // borrowed from globals_

}  // namespace

bool init_glue() {
    if (globals_) return true;
    python::py_ref globals(PyDict_New());
    if (!globals) return false;
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    PyDict_SetItemString(globals.get(), "__name__", python::py_ref(PyUnicode_FromString("m0.asgi")).get());
    python::py_ref r(PyRun_String(glue_source, Py_file_input, globals.get(), globals.get()));
    if (!r) return false;
    for (std::size_t i = 0; i < std::size(glue_names); ++i) {
        helpers[i] = PyDict_GetItemString(globals.get(), glue_names[i]);
        if (!helpers[i]) {
            PyErr_Format(PyExc_RuntimeError, "m0.asgi: the glue defines no %s", glue_names[i]);
            return false;
        }
    }
    globals_ = globals;
    return true;
}

PyObject* glue(glue_name name) { return helpers[static_cast<std::size_t>(name)]; }

void clear_glue() {
    for (auto& h : helpers) h = nullptr;
    globals_ = python::py_ref();
}

}  // namespace m0::asgi
