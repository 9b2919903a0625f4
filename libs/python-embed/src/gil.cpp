// gil_scope: the per-job GIL acquisition of executor threads.
#include <m0/python/gil.hpp>

namespace m0::python {

PyThreadState* current_thread_state() noexcept;  // interpreter.cpp

gil_scope::gil_scope() noexcept : attached_(current_thread_state()) {
    if (attached_)
        PyEval_RestoreThread(attached_);
    else
        gilstate_ = PyGILState_Ensure();
}

gil_scope::~gil_scope() {
    if (attached_)
        PyEval_SaveThread();
    else
        PyGILState_Release(gilstate_);
}

}  // namespace m0::python
