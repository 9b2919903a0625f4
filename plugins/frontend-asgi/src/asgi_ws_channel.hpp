#pragma once
// The C object the Python glue (_WebSocket) talks to for one connection of
// the websocket scope: a thin handle on a websocket_call, cut loose (and
// then refusing use) once the call finished.
#include <Python.h>

namespace m0::asgi {

class websocket_call;

// Readies the type; false with a Python exception set.
bool init_ws_channel_type();
// New reference to a channel for `call`.
PyObject* new_ws_channel(websocket_call* call);
// The call is over: the channel refuses further use.
void detach_ws_channel(PyObject* channel);

}  // namespace m0::asgi
