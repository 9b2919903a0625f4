#pragma once
// Starting a coroutine as an asyncio Task whose first step runs at once, in
// the caller, instead of on the loop's next iteration: what Python 3.12's
// eager tasks do (`asyncio.Task(coro, eager_start=True)`), offered for 3.10
// and 3.11 too. A request handler that answers without waiting on anything
// then runs to its end with no scheduled callback and no loop iteration of
// its own, yet inside a real Task: `asyncio.current_task()`, contextvars,
// cancellation and exceptions behave as for `loop.create_task()`.
#include <Python.h>

#include <m0/python/api.hpp>

namespace m0::python {

// Loop thread, GIL held, outside any running Task (a loop callback, say).
// A new reference to the Task of `coro` on `loop`, after its first step:
// done already if the coroutine returned (or raised) without suspending.
// Null with a Python exception set if the Task could not be made; the
// coroutine is then left unstarted.
//
// How the first step runs now: on 3.12+, through eager_start. On 3.10 and
// 3.11 the Task is made as usual, but the step it schedules through
// `loop.call_soon` is taken while it is made and run here, in the Task's
// context (a loop implemented in Python: asyncio's own; a loop whose
// instance takes no attribute, as uvloop's, gets a plain create_task).
// A loop with a task factory (loop.set_task_factory) gets `loop.create_task`
// on every version: the factory's Task, started when that Task starts.
M0PY_API PyObject* start_task_eagerly(PyObject* loop, PyObject* coro);

}  // namespace m0::python
