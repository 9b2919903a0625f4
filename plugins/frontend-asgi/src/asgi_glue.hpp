#pragma once
// The Python half of the ASGI frontend: receive() and the rarer send()
// messages around the C channel, the coroutine that runs the app in its
// Task, and the lifespan protocol. GIL held.
#include <Python.h>

namespace m0::asgi {

enum class glue_name {
    serve,               // _serve(app, scope, channel): an HTTP request's coroutine
    serve_ws,            // _serve_ws(app, scope, channel): a WebSocket's
    send_other,          // _send_other(channel, message): send() of the rarer types
    await_room,          // _await_room(future): send() waiting for the output to drain
    client_disconnected, // the OSError send() raises once the client is gone
    lifespan,            // Lifespan(app, states): one loop's lifespan
    count
};

// Compiles the helpers once per process; false with a Python exception set.
bool init_glue();
// Borrowed reference to a helper.
PyObject* glue(glue_name name);
void clear_glue();

}  // namespace m0::asgi
