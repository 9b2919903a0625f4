#pragma once
// Keeping the embedded interpreter usable across fork() (prefork serving).
// Call the three from the thread that started the interpreter, with no other
// thread running Python: before_fork() right before fork(), then
// after_fork_parent() in the parent (also when fork() failed) or
// after_fork_child() in the child. No-ops when the interpreter never started.
#include <m0/python/api.hpp>

namespace m0::python {

// Takes the GIL and lets CPython (and os.register_at_fork callbacks)
// prepare: the import lock is held across the fork.
M0PY_API void before_fork();
// Lets CPython finish in the parent and releases the GIL again.
M0PY_API void after_fork_parent();
// Re-initialises the GIL, locks and `threading` for the single thread of the
// child, runs the after-fork callbacks, and releases the GIL.
M0PY_API void after_fork_child();

}  // namespace m0::python
