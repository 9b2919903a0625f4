#pragma once
// An awaitable that is already done with the value None: what a C function
// returns for `await f()` when it has nothing to wait for. Awaiting it never
// suspends the coroutine and costs no coroutine, future or loop round; one
// immutable instance serves every caller. It is registered as a
// collections.abc.Coroutine (send/throw/close of a coroutine that has
// returned), so `asyncio.create_task()` and anyio's `start_soon` take it too.
#include <Python.h>

#include <m0/python/api.hpp>

namespace m0::python {

// New reference to the done awaitable; null with a Python exception set.
// GIL held.
M0PY_API PyObject* ready_none();

}  // namespace m0::python
