#pragma once
// What can be learnt about a thread stuck in Python code from another
// thread, without waiting for it: its stack, read without the GIL (as
// faulthandler does), and whether the interpreter can run code at all.
#include <Python.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <m0/python/api.hpp>

namespace m0::python {

// The Python stack of the thread whose state is `tstate`, most recent call
// first, one frame a line ('  File "app.py", line 12 in view'), read
// without the GIL: frames the thread changes meanwhile may come out wrong,
// never a crash of this process. Empty when nothing could be read, or when
// this CPython does not export its dumper (3.10 and 3.13 shared builds).
M0PY_API std::string stack_of(PyThreadState* tstate);

// GIL held: the stack of the thread whose threading ident is
// `thread_ident` (sys._current_frames), outermost call first; empty if none.
M0PY_API std::string stack_with_gil(unsigned long thread_ident);

// Runs `fn` with the GIL on a new thread and returns what it returned, if
// that thread got the GIL within `wait`; nullopt if not (the GIL is held
// past `wait` by code that does not give it up), and the thread is left to
// finish on its own: `fn` must own what it uses.
M0PY_API std::optional<std::string> with_gil_within(std::chrono::milliseconds wait, std::function<std::string()> fn);

// True when some thread can take the GIL within `wait`.
M0PY_API bool gil_free_within(std::chrono::milliseconds wait);

}  // namespace m0::python
