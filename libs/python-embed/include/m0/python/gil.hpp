#pragma once
// RAII helpers for the GIL. Not reentrant: a thread holding a gil_scope must
// not open another one.
#include <Python.h>

#include <m0/python/api.hpp>

namespace m0::python {

// Holds the GIL for its lifetime. Uses the thread's own state when
// attach_thread() ran on this thread, otherwise PyGILState (which creates a
// temporary thread state).
//
// On an attached executor thread whose executor calls thread_hooks::on_idle
// (known from the first release_kept_gil() there), the end of a gil_scope
// keeps the GIL instead of giving it up, and the next gil_scope finds it
// held: jobs taken back to back cost one hand-off of the GIL, not one each
// (a hand-off is a mutex round trip on each side, and with several threads a
// wake). It is given up when the thread goes idle (release_kept_gil from
// on_idle), after max_kept_jobs scopes in a row (so a thread waiting for it
// gets it even if the jobs run no bytecode, where CPython would ask the
// holder to drop it), and before the thread detaches.
class M0PY_API gil_scope {
public:
    gil_scope() noexcept;
    ~gil_scope();
    gil_scope(const gil_scope&) = delete;
    gil_scope& operator=(const gil_scope&) = delete;

private:
    PyThreadState* attached_ = nullptr;
    PyGILState_STATE gilstate_{};
};

// Scopes in a row that may keep the GIL (see gil_scope).
inline constexpr unsigned max_kept_jobs = 64;

// For thread_hooks::on_idle: gives up a GIL kept by gil_scope, and marks
// this thread as one whose executor calls on_idle (gil_scope keeps the GIL
// only there). No effect on a thread that is not attached.
M0PY_API void release_kept_gil() noexcept;

// Releases the GIL for its lifetime (around a blocking wait) while a
// gil_scope is open on this thread.
class gil_release {
public:
    gil_release() noexcept : saved_(PyEval_SaveThread()) {}
    ~gil_release() { PyEval_RestoreThread(saved_); }
    gil_release(const gil_release&) = delete;
    gil_release& operator=(const gil_release&) = delete;

private:
    PyThreadState* saved_;
};

}  // namespace m0::python
