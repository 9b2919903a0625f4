#include "asgi_glue.hpp"

#include <m0/python/ref.hpp>

namespace m0::asgi {

namespace {

// `ch` is the C channel of one request (asgi_channel.cpp): it owns the
// exchange's side; this side owns the ASGI message protocol.
constexpr const char* glue_source = R"PY(
import asyncio
import traceback

# Lifespan state per (loop, id(app)): several ASGI mounts may share a loop.
_states = {}


async def _serve(app, scope, ch):
    body_taken = False

    async def receive():
        nonlocal body_taken
        if not body_taken:
            # The engine hands whole bodies today; a streamed body would
            # return chunks here with more_body True until the last.
            body_taken = True
            return {"type": "http.request", "body": ch.body(), "more_body": False}
        fut = asyncio.get_running_loop().create_future()
        if ch.wait_disconnect(fut):
            await fut
        return {"type": "http.disconnect"}

    # The channel is send(): it takes http.response.start and
    # http.response.body itself and leaves the other types to _send_other.
    try:
        await app(scope, receive, ch)
    except asyncio.CancelledError:
        ch.fail(None)
        raise
    except BaseException:
        ch.fail(None if ch.gone else traceback.format_exc())
    else:
        if not ch.started:
            ch.fail("the application returned without sending http.response.start")
        elif not ch.ended:
            ch.fail("the application returned before the response body was complete")
    finally:
        ch.end()


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

    def __init__(self, app):
        self.app = app
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
            _states[(loop, id(self.app))] = self.state
        return outcome

    async def shutdown(self):
        if self.task is None or self.task.done():
            return ("ok", "")
        _settle(self.go_down, None)
        return await self.stopped

    async def _main(self):
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.3"}, "state": self.state}
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

}  // namespace

bool init_glue() {
    if (globals_) return true;
    python::py_ref globals(PyDict_New());
    if (!globals) return false;
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    PyDict_SetItemString(globals.get(), "__name__", python::py_ref(PyUnicode_FromString("m0.asgi")).get());
    python::py_ref r(PyRun_String(glue_source, Py_file_input, globals.get(), globals.get()));
    if (!r) return false;
    globals_ = globals;
    return true;
}

PyObject* glue(const char* name) { return PyDict_GetItemString(globals_.get(), name); }

void clear_glue() { globals_ = python::py_ref(); }

}  // namespace m0::asgi
