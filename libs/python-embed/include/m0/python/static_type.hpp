#pragma once
// A zeroed static PyTypeObject with its object header set, for C types
// defined in C++ (designated PyTypeObject initialisers are not C++).
#include <Python.h>

namespace m0::python {

inline PyTypeObject blank_type(const char* name, Py_ssize_t basicsize) {
    PyTypeObject t{};
    Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);
    Py_SET_TYPE(reinterpret_cast<PyObject*>(&t), &PyType_Type);
    t.tp_name = name;
    t.tp_basicsize = basicsize;
    t.tp_flags = Py_TPFLAGS_DEFAULT;
    return t;
}

}  // namespace m0::python
