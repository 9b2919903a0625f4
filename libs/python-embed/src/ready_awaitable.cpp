#include <m0/python/ready_awaitable.hpp>

#include <m0/python/static_type.hpp>

namespace m0::python {

namespace {

// `await x` calls am_await, then sends None into the iterator it returns:
// am_send answers "returned None" at once, so the awaiting coroutine goes
// on without raising StopIteration. Drivers that call next() get the same
// end from tp_iternext (null with no exception set: StopIteration(None)).
PySendResult send_done(PyObject*, PyObject*, PyObject** result) {
    Py_INCREF(Py_None);
    *result = Py_None;
    return PYGEN_RETURN;
}

PyObject* next_done(PyObject*) { return nullptr; }

PyObject* self_of(PyObject* self) {
    Py_INCREF(self);
    return self;
}

PyAsyncMethods async_methods = {self_of, nullptr, nullptr, send_done};

PyTypeObject ready_type = blank_type("m0.ready", sizeof(PyObject));

PyObject ready_object = {_PyObject_EXTRA_INIT 1, &ready_type};

}  // namespace

PyObject* ready_none() {
    if (!(ready_type.tp_flags & Py_TPFLAGS_READY)) {
        ready_type.tp_as_async = &async_methods;
        ready_type.tp_iter = PyObject_SelfIter;
        ready_type.tp_iternext = next_done;
        ready_type.tp_doc = "an awaitable that is already done (None)";
        if (PyType_Ready(&ready_type) != 0) return nullptr;
    }
    Py_INCREF(&ready_object);
    return &ready_object;
}

}  // namespace m0::python
