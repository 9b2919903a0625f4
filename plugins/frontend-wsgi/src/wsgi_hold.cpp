#include "wsgi_hold.hpp"

#include <chrono>
#include <cmath>
#include <string>

#include <m0/python/ref.hpp>
#include <m0/python/static_type.hpp>
#include <m0/realtime.hpp>

#include "wsgi_call.hpp"

namespace m0::wsgi {
namespace {

struct hold_object {
    PyObject_HEAD
    wsgi_call* call;  // null once the request is over
};

bool add_channel(PyObject* o, std::vector<std::string>& out) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : nullptr;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "m0.hold(): a channel must be str, not %.100s", Py_TYPE(o)->tp_name);
        return false;
    }
    out.emplace_back(s, static_cast<std::size_t>(n));
    return true;
}

// A str is one channel; any other iterable lists them.
bool parse_channels(PyObject* o, std::vector<std::string>& out, bool required) {
    if (PyUnicode_Check(o)) return add_channel(o, out);
    python::py_ref it(PyObject_GetIter(o));
    if (!it) {
        PyErr_Format(PyExc_TypeError, "m0.hold(): channels must be a str or an iterable of str, not %.100s",
                     Py_TYPE(o)->tp_name);
        return false;
    }
    while (python::py_ref item{PyIter_Next(it.get())}) {
        if (!add_channel(item.get(), out)) return false;
    }
    if (PyErr_Occurred()) return false;
    if (out.empty() && required) {
        PyErr_SetString(PyExc_ValueError, "m0.hold(): no channel given");
        return false;
    }
    return true;
}

PyObject* hold_call(PyObject* o, PyObject* args, PyObject* kwargs) {
    static const char* kwlist[] = {"channels", "mode", "on_message", "timeout", nullptr};
    PyObject* channels = nullptr;
    const char* mode = "sse";
    PyObject* on_message = Py_None;
    PyObject* timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|s$OO:hold", const_cast<char**>(kwlist), &channels, &mode,
                                     &on_message, &timeout))
        return nullptr;
    realtime::hold_options options;
    std::string m(mode);
    if (m == "sse") {
        options.mode = realtime::hold_mode::sse;
    } else if (m == "poll") {
        options.mode = realtime::hold_mode::poll;
    } else if (m == "ws") {
        options.mode = realtime::hold_mode::ws;
    } else {
        PyErr_Format(PyExc_ValueError, "m0.hold(): mode must be 'sse', 'poll' or 'ws', not '%.100s'", mode);
        return nullptr;
    }
    // A WebSocket may start with no channel and subscribe later.
    if (!parse_channels(channels, options.channels, options.mode != realtime::hold_mode::ws)) return nullptr;
    if (on_message != Py_None && options.mode != realtime::hold_mode::ws) {
        PyErr_SetString(PyExc_ValueError, "m0.hold(): on_message is for mode='ws' only");
        return nullptr;
    }
    if (on_message != Py_None && !PyCallable_Check(on_message)) {
        PyErr_Format(PyExc_TypeError, "m0.hold(): on_message must be callable, not %.100s",
                     Py_TYPE(on_message)->tp_name);
        return nullptr;
    }
    if (timeout != Py_None) {
        double seconds = PyFloat_AsDouble(timeout);
        if (seconds == -1.0 && PyErr_Occurred()) return nullptr;
        if (!std::isfinite(seconds) || seconds < 0) {
            PyErr_SetString(PyExc_ValueError, "m0.hold(): timeout must be a number of seconds >= 0, or None");
            return nullptr;
        }
        options.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
    }
    auto* self = reinterpret_cast<hold_object*>(o);
    if (!self->call) {
        PyErr_SetString(PyExc_RuntimeError, "m0.hold() called after its request ended");
        return nullptr;
    }
    return self->call->hold(std::move(options), on_message == Py_None ? nullptr : on_message);
}

PyTypeObject hold_type = [] {
    PyTypeObject t = python::blank_type("m0.hold", sizeof(hold_object));
    t.tp_call = hold_call;
    t.tp_doc = "hold(channels, mode='sse', *, on_message=None, timeout=None): hand this request's connection to m0.";
    return t;
}();

}  // namespace

PyObject* make_hold_callable(wsgi_call* call) {
    if (!(hold_type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&hold_type) != 0) return nullptr;
    hold_object* o = PyObject_New(hold_object, &hold_type);
    if (!o) return nullptr;
    o->call = call;
    return reinterpret_cast<PyObject*>(o);
}

void detach_hold_callable(PyObject* hold) noexcept {
    if (hold) reinterpret_cast<hold_object*>(hold)->call = nullptr;
}

}  // namespace m0::wsgi
