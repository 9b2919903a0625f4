#pragma once
// The `conn` a WebSocket hold's on_message receives: a Python object over the
// hold's realtime::connection (send, subscribe, unsubscribe, close, id).
// Its methods take the GIL only to read their arguments; any thread.
#include <Python.h>

#include <memory>

#include <m0/realtime.hpp>

namespace m0::wsgi {

// New reference, or null with a Python exception set. GIL held.
PyObject* make_connection_object(std::shared_ptr<realtime::connection> conn);

}  // namespace m0::wsgi
