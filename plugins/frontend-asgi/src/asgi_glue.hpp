#pragma once
// The Python half of the ASGI frontend: receive()/send() around the C
// channel, the Task that runs the app, and the lifespan protocol. GIL held.
#include <Python.h>

namespace m0::asgi {

// Compiles the helpers once per process; false with a Python exception set.
bool init_glue();
// Borrowed reference to a helper by name ("spawn", "Lifespan").
PyObject* glue(const char* name);
void clear_glue();

}  // namespace m0::asgi
