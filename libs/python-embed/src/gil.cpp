// gil_scope: the per-job GIL acquisition of executor threads, kept from one
// job to the next while the thread has work.
#include <m0/python/gil.hpp>

namespace m0::python {

PyThreadState* current_thread_state() noexcept;  // interpreter.cpp

namespace {

// This thread's executor calls on_idle: set by the first release_kept_gil().
thread_local bool idle_hooks_called = false;
// The GIL is held by this thread between gil_scopes; and by how many in a row.
thread_local bool kept = false;
thread_local unsigned kept_scopes = 0;

}  // namespace

gil_scope::gil_scope() noexcept : attached_(current_thread_state()) {
    if (attached_) {
        if (!kept) PyEval_RestoreThread(attached_);
        kept = false;
    } else {
        gilstate_ = PyGILState_Ensure();
    }
}

gil_scope::~gil_scope() {
    if (!attached_) {
        PyGILState_Release(gilstate_);
        return;
    }
    if (idle_hooks_called && ++kept_scopes < max_kept_jobs) {
        kept = true;
        return;
    }
    kept_scopes = 0;
    PyEval_SaveThread();
}

void release_kept_gil() noexcept {
    if (!current_thread_state()) return;
    idle_hooks_called = true;
    kept_scopes = 0;
    if (!kept) return;
    kept = false;
    PyEval_SaveThread();
}

// interpreter.cpp: detach_thread takes the GIL unless it is kept here, and
// the thread keeps nothing after.
bool take_kept_gil() noexcept {
    const bool was = kept;
    kept = false;
    kept_scopes = 0;
    idle_hooks_called = false;
    return was;
}

}  // namespace m0::python
