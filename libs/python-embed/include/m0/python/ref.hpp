#pragma once
// py_ref: owns one strong reference to a Python object. Only touch it with
// the GIL held (including its destructor).
#include <Python.h>

#include <utility>

namespace m0::python {

class py_ref {
public:
    py_ref() = default;
    // Takes over a new reference (as returned by most C-API calls).
    explicit py_ref(PyObject* owned) noexcept : p_(owned) {}
    static py_ref borrow(PyObject* borrowed) noexcept {
        Py_XINCREF(borrowed);
        return py_ref(borrowed);
    }
    py_ref(const py_ref& o) noexcept : p_(o.p_) { Py_XINCREF(p_); }
    py_ref(py_ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    py_ref& operator=(py_ref o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    ~py_ref() { Py_XDECREF(p_); }

    PyObject* get() const noexcept { return p_; }
    PyObject* release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    PyObject* p_ = nullptr;
};

}  // namespace m0::python
