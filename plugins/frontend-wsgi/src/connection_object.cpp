#include "connection_object.hpp"

#include <new>
#include <string_view>

#include <m0/python/ref.hpp>
#include <m0/python/static_type.hpp>

namespace m0::wsgi {
namespace {

struct connection_object {
    PyObject_HEAD
    std::shared_ptr<realtime::connection> conn;
};

realtime::connection& conn_of(PyObject* o) { return *reinterpret_cast<connection_object*>(o)->conn; }

bool channel_arg(PyObject* arg, const char* method, std::string_view& out) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &n) : nullptr;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s(): a channel must be str, not %.100s", method, Py_TYPE(arg)->tp_name);
        return false;
    }
    out = std::string_view(s, static_cast<std::size_t>(n));
    return true;
}

PyObject* conn_send(PyObject* self, PyObject* data) {
    if (PyUnicode_Check(data)) {
        Py_ssize_t n = 0;
        const char* s = PyUnicode_AsUTF8AndSize(data, &n);
        if (!s) return nullptr;
        conn_of(self).send(std::string_view(s, static_cast<std::size_t>(n)), realtime::payload_kind::text);
        Py_RETURN_NONE;
    }
    // bytes, bytearray, memoryview: a binary message.
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "send(): data must be str or bytes, not %.100s", Py_TYPE(data)->tp_name);
        return nullptr;
    }
    conn_of(self).send(std::string_view(static_cast<const char*>(view.buf), static_cast<std::size_t>(view.len)),
                       realtime::payload_kind::binary);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

PyObject* conn_subscribe(PyObject* self, PyObject* channel) {
    std::string_view ch;
    if (!channel_arg(channel, "subscribe", ch)) return nullptr;
    // Without the GIL: with a Redis bus, subscribing waits for the server to
    // confirm the channel (`ch` stays valid: the caller holds the str).
    auto& conn = conn_of(self);
    Py_BEGIN_ALLOW_THREADS
    conn.subscribe(ch);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyObject* conn_unsubscribe(PyObject* self, PyObject* channel) {
    std::string_view ch;
    if (!channel_arg(channel, "unsubscribe", ch)) return nullptr;
    conn_of(self).unsubscribe(ch);
    Py_RETURN_NONE;
}

// Codes a server may send (RFC 6455 7.4 and the IANA registry): 1004-1006
// and 1015 are never on the wire.
bool sendable_close_code(long code) {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

PyObject* conn_close(PyObject* self, PyObject* args, PyObject* kwargs) {
    static const char* kwlist[] = {"code", "reason", nullptr};
    int code = 1000;
    PyObject* reason_text = nullptr;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|iU:close", const_cast<char**>(kwlist), &code, &reason_text))
        return nullptr;
    const char* reason = "";
    Py_ssize_t reason_size = 0;
    if (reason_text && !(reason = PyUnicode_AsUTF8AndSize(reason_text, &reason_size))) return nullptr;
    if (!sendable_close_code(code)) {
        PyErr_Format(PyExc_ValueError, "close(): %d is not a close code a server may send "
                                       "(1000-1003, 1007-1014, 3000-4999)", code);
        return nullptr;
    }
    // A close frame's payload is at most 125 bytes, two of them the code.
    if (reason_size > 123) {
        PyErr_SetString(PyExc_ValueError, "close(): reason must be at most 123 bytes as UTF-8");
        return nullptr;
    }
    conn_of(self).close(static_cast<std::uint16_t>(code),
                        std::string_view(reason, static_cast<std::size_t>(reason_size)));
    Py_RETURN_NONE;
}

PyObject* conn_id(PyObject* self, void*) { return PyLong_FromUnsignedLongLong(conn_of(self).id()); }

PyObject* conn_repr(PyObject* self) {
    return PyUnicode_FromFormat("<m0.connection id=%llu>", static_cast<unsigned long long>(conn_of(self).id()));
}

void conn_dealloc(PyObject* self) {
    reinterpret_cast<connection_object*>(self)->conn.~shared_ptr();
    PyObject_Free(self);
}

PyMethodDef methods[] = {
    {"send", conn_send, METH_O, "send(data): str as a text message, bytes as a binary one."},
    {"subscribe", conn_subscribe, METH_O, "subscribe(channel): also receive what is published on channel."},
    {"unsubscribe", conn_unsubscribe, METH_O, "unsubscribe(channel): stop receiving channel."},
    {"close", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(conn_close)), METH_VARARGS | METH_KEYWORDS,
     "close(code=1000, reason=''): start the closing handshake."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef getset[] = {{"id", conn_id, nullptr, "unique within the serving process", nullptr},
                        {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject connection_type = [] {
    PyTypeObject t = python::blank_type("m0.connection", sizeof(connection_object));
    t.tp_dealloc = conn_dealloc;
    t.tp_repr = conn_repr;
    t.tp_methods = methods;
    t.tp_getset = getset;
    t.tp_doc = "A WebSocket held with m0.hold(..., 'ws'); every method works from any thread.";
    return t;
}();

}  // namespace

PyObject* make_connection_object(std::shared_ptr<realtime::connection> conn) {
    if (!(connection_type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&connection_type) != 0) return nullptr;
    connection_object* o = PyObject_New(connection_object, &connection_type);
    if (!o) return nullptr;
    new (&o->conn) std::shared_ptr<realtime::connection>(std::move(conn));
    return reinterpret_cast<PyObject*>(o);
}

}  // namespace m0::wsgi
