#include <m0/python/ready_awaitable.hpp>

#include <m0/python/ref.hpp>
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

// The coroutine protocol, for callers that drive it by hand or insist on a
// coroutine (asyncio.create_task, anyio's start_soon): it is a coroutine
// that has already returned None.
PyObject* co_send(PyObject*, PyObject*) {
    PyErr_SetNone(PyExc_StopIteration);
    return nullptr;
}

// throw() into a finished coroutine raises what was thrown.
PyObject* co_throw(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "throw() takes 1 to 3 arguments");
        return nullptr;
    }
    PyObject* kind = args[0];
    PyObject* value = nargs > 1 ? args[1] : Py_None;
    if (PyExceptionInstance_Check(kind))
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(kind)), kind);
    else if (PyExceptionClass_Check(kind))
        PyErr_SetObject(kind, value);
    else
        PyErr_SetString(PyExc_TypeError, "exceptions must be classes or instances deriving from BaseException");
    return nullptr;
}

PyObject* co_close(PyObject*, PyObject*) { Py_RETURN_NONE; }

PyMethodDef coroutine_methods[] = {
    {"send", co_send, METH_O, "raises StopIteration(None): the coroutine is done"},
    {"throw", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(co_throw)), METH_FASTCALL,
     "raises what is thrown"},
    {"close", co_close, METH_NOARGS, "nothing to close"},
    {nullptr, nullptr, 0, nullptr}};

// collections.abc.Coroutine.register(type): isinstance checks (asyncio's
// iscoroutine, anyio) then accept it.
bool register_as_coroutine(PyTypeObject* type) {
    python::py_ref abc(PyImport_ImportModule("collections.abc"));
    python::py_ref coroutine(abc ? PyObject_GetAttrString(abc.get(), "Coroutine") : nullptr);
    python::py_ref done(coroutine ? PyObject_CallMethod(coroutine.get(), "register", "(O)", type) : nullptr);
    return done.get() != nullptr;
}

PyTypeObject ready_type = blank_type("m0.ready", sizeof(PyObject));

PyObject ready_object = {_PyObject_EXTRA_INIT 1, &ready_type};

}  // namespace

PyObject* ready_none() {
    if (!(ready_type.tp_flags & Py_TPFLAGS_READY)) {
        ready_type.tp_as_async = &async_methods;
        ready_type.tp_iter = PyObject_SelfIter;
        ready_type.tp_iternext = next_done;
        ready_type.tp_methods = coroutine_methods;
        ready_type.tp_doc = "a coroutine that has already returned None";
        if (PyType_Ready(&ready_type) != 0 || !register_as_coroutine(&ready_type)) return nullptr;
    }
    Py_INCREF(&ready_object);
    return &ready_object;
}

}  // namespace m0::python
