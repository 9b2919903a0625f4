#pragma once
// The C object the Python glue talks to for one request: a thin handle on
// an asgi_call, cut loose (and then refusing use) once the call finished.
// Calling it is the app's send(message).
#include <Python.h>

namespace m0::asgi {

class asgi_call;

// Readies the type; false with a Python exception set.
bool init_channel_type();
// New reference to a channel for `call`.
PyObject* new_channel(asgi_call* call);
// The call is over: the channel refuses further use.
void detach_channel(PyObject* channel);
// Whether the call of `channel` is over (detached).
bool channel_is_detached(PyObject* channel);

}  // namespace m0::asgi
