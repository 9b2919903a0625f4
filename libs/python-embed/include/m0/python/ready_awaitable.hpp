#pragma once
// An awaitable that is already done with the value None: what a C function
// returns for `await f()` when it has nothing to wait for. Awaiting it never
// suspends the coroutine and costs no coroutine, future or loop round; one
// immutable instance serves every caller. It is not a coroutine:
// `asyncio.ensure_future()` takes it, `asyncio.create_task()` does not.
#include <Python.h>

#include <m0/python/api.hpp>

namespace m0::python {

// New reference to the done awaitable; null with a Python exception set.
// GIL held.
M0PY_API PyObject* ready_none();

}  // namespace m0::python
