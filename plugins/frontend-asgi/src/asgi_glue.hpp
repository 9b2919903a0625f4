#pragma once
// The Python half of the ASGI frontend: receive() and the rarer send()
// messages around the C channel, the coroutine that runs the app in its
// Task, and the lifespan protocol. GIL held.
#include <Python.h>

namespace m0::asgi {

// Compiles the helpers once per process; false with a Python exception set.
bool init_glue();
// Borrowed reference to a helper by name ("_serve", "Lifespan").
PyObject* glue(const char* name);
void clear_glue();

}  // namespace m0::asgi
