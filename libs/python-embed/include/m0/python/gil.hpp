#pragma once
// RAII helpers for the GIL. Not reentrant: a thread holding a gil_scope must
// not open another one.
#include <Python.h>

#include <m0/python/api.hpp>

namespace m0::python {

// Holds the GIL for its lifetime. Uses the thread's own state when
// attach_thread() ran on this thread, otherwise PyGILState (which creates a
// temporary thread state).
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
