// fork() support: the calling thread holds the GIL across fork(), as
// os.fork() does, so that PyOS_AfterFork_Child finds a current thread state
// to rebuild the GIL around.
#include <m0/python/fork.hpp>

#include <Python.h>

#include <m0/python/interpreter.hpp>

namespace m0::python {
namespace {

// One fork at a time, from one thread: the state spans the three calls.
bool holding = false;
PyGILState_STATE gil_state{};

}  // namespace

void before_fork() {
    if (holding || !started()) return;
    // The thread that started the interpreter still owns its main thread
    // state (PyGILState knows it), so this restores that state.
    gil_state = PyGILState_Ensure();
    holding = true;
    PyOS_BeforeFork();
}

void after_fork_parent() {
    if (!holding) return;
    PyOS_AfterFork_Parent();
    holding = false;
    PyGILState_Release(gil_state);
}

void after_fork_child() {
    if (!holding) return;
    PyOS_AfterFork_Child();
    holding = false;
    // Executor threads of the child attach thread states of their own; this
    // one only gives the GIL up, as the interpreter's start did.
    PyGILState_Release(gil_state);
}

}  // namespace m0::python
