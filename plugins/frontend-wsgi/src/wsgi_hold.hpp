#pragma once
// environ["m0.hold"]: the callable a view uses to hand its connection to the
// realtime hub (m0/realtime.hpp). Present when the deployment has a
// `realtime:` section. GIL held for everything here.
#include <Python.h>

namespace m0::wsgi {

class wsgi_call;

// New reference bound to `call`, or null with a Python exception set.
PyObject* make_hold_callable(wsgi_call* call);
// The request is over: the callable raises from now on.
void detach_hold_callable(PyObject* hold) noexcept;

}  // namespace m0::wsgi
