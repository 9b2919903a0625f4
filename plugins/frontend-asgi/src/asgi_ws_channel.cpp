#include "asgi_ws_channel.hpp"

#include <m0/python/static_type.hpp>

#include "asgi_websocket.hpp"

namespace m0::asgi {

namespace {

struct ws_channel_object {
    PyObject_HEAD
    websocket_call* call;
};

websocket_call* call_of(PyObject* self) {
    websocket_call* c = reinterpret_cast<ws_channel_object*>(self)->call;
    if (!c) PyErr_SetString(PyExc_RuntimeError, "ASGI: this WebSocket is over");
    return c;
}

// Unpacks exactly `n` positional arguments; false with TypeError set.
bool args_of(PyObject* args, const char* name, Py_ssize_t n, PyObject** out) {
    if (PyTuple_GET_SIZE(args) != n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments", name, n);
        return false;
    }
    for (Py_ssize_t i = 0; i < n; ++i) out[i] = PyTuple_GET_ITEM(args, i);
    return true;
}

PyObject* done_or_error(bool ok) {
    if (!ok) return nullptr;
    Py_RETURN_NONE;
}

PyObject* wc_attach(PyObject* self, PyObject* conn) {
    websocket_call* c = call_of(self);
    if (c) c->attach(conn);
    return done_or_error(c != nullptr);
}

PyObject* wc_accept(PyObject* self, PyObject* args) {
    PyObject* a[2];
    websocket_call* c = args_of(args, "accept", 2, a) ? call_of(self) : nullptr;
    return done_or_error(c && c->accept(a[0], a[1]));
}

PyObject* wc_deny(PyObject* self, PyObject*) {
    websocket_call* c = call_of(self);
    if (c) c->deny();
    return done_or_error(c != nullptr);
}

PyObject* wc_respond_start(PyObject* self, PyObject* args) {
    PyObject* a[2];
    websocket_call* c = args_of(args, "respond_start", 2, a) ? call_of(self) : nullptr;
    return done_or_error(c && c->respond_start(a[0], a[1]));
}

PyObject* wc_respond_body(PyObject* self, PyObject* args) {
    PyObject* a[2];
    websocket_call* c = args_of(args, "respond_body", 2, a) ? call_of(self) : nullptr;
    return done_or_error(c && c->respond_body(a[0], PyObject_IsTrue(a[1]) == 1));
}

// True: the app should wait for room (wait_room) before it goes on.
PyObject* wc_send(PyObject* self, PyObject* data) {
    websocket_call* c = call_of(self);
    const int wait = c ? c->send(data) : -1;
    return wait < 0 ? nullptr : PyBool_FromLong(wait);
}

PyObject* wc_wait_room(PyObject* self, PyObject* future) {
    websocket_call* c = call_of(self);
    if (c) c->wait_room(future);
    return done_or_error(c != nullptr);
}

PyObject* wc_close(PyObject* self, PyObject* args) {
    PyObject* a[2];
    websocket_call* c = args_of(args, "close", 2, a) ? call_of(self) : nullptr;
    return done_or_error(c && c->close(a[0], a[1]));
}

PyObject* wc_consumed(PyObject* self, PyObject* size) {
    websocket_call* c = reinterpret_cast<ws_channel_object*>(self)->call;
    const std::size_t n = PyLong_AsSize_t(size);
    if (PyErr_Occurred()) return nullptr;
    if (c) c->consumed(n);  // a call that is over has no queue to account for
    Py_RETURN_NONE;
}

PyObject* wc_fail(PyObject* self, PyObject* message) {
    if (websocket_call* c = reinterpret_cast<ws_channel_object*>(self)->call) c->fail(message);
    Py_RETURN_NONE;
}

// The coroutine's last step, and the Task's done callback (for a Task
// cancelled before it ran): whichever comes first finishes the call.
PyObject* wc_end(PyObject* self, PyObject*) {
    if (websocket_call* c = reinterpret_cast<ws_channel_object*>(self)->call) c->finish();  // detaches the channel
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"attach", wc_attach, METH_O, "the glue's _WebSocket, which receives the inbound messages"},
    {"accept", wc_accept, METH_VARARGS, "websocket.accept: (subprotocol, headers)"},
    {"deny", wc_deny, METH_NOARGS, "websocket.close before accept: HTTP 403"},
    {"respond_start", wc_respond_start, METH_VARARGS, "websocket.http.response.start: (status, headers)"},
    {"respond_body", wc_respond_body, METH_VARARGS, "websocket.http.response.body: (body, more_body)"},
    {"send", wc_send, METH_O, "websocket.send of str (text) or bytes; True: wait for room"},
    {"wait_room", wc_wait_room, METH_O, "resolve the future once the output has room"},
    {"close", wc_close, METH_VARARGS, "websocket.close after accept: (code, reason)"},
    {"consumed", wc_consumed, METH_O, "receive() took an inbound message of this many bytes"},
    {"fail", wc_fail, METH_O, "log the message (if any); 500 before accept, close 1011 after"},
    {"end", wc_end, METH_NOARGS, "the coroutine's last step: finish now"},
    {"done", wc_end, METH_O, "the Task's done callback"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject ws_channel_type = python::blank_type("m0.asgi_ws_channel", sizeof(ws_channel_object));

}  // namespace

bool init_ws_channel_type() {
    if (ws_channel_type.tp_flags & Py_TPFLAGS_READY) return true;
    ws_channel_type.tp_methods = methods;
    ws_channel_type.tp_dealloc = [](PyObject* self) { PyObject_Free(self); };
    return PyType_Ready(&ws_channel_type) == 0;
}

PyObject* new_ws_channel(websocket_call* call) {
    auto* ch = PyObject_New(ws_channel_object, &ws_channel_type);
    if (ch) ch->call = call;
    return reinterpret_cast<PyObject*>(ch);
}

void detach_ws_channel(PyObject* channel) { reinterpret_cast<ws_channel_object*>(channel)->call = nullptr; }

}  // namespace m0::asgi
