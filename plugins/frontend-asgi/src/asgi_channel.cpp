#include "asgi_channel.hpp"

#include <cstddef>

#include <m0/python/static_type.hpp>

#include "asgi_call.hpp"

namespace m0::asgi {

namespace {

struct channel_object {
    PyObject_HEAD
    asgi_call* call;
    vectorcallfunc vectorcall;  // ch_call: calling the channel is send()
};

asgi_call* call_of(PyObject* self) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    if (!c) PyErr_SetString(PyExc_RuntimeError, "ASGI: this request is over");
    return c;
}

PyObject* ch_body(PyObject* self, PyObject*) {
    asgi_call* c = call_of(self);
    return c ? c->body() : nullptr;
}

PyObject* ch_pull(PyObject* self, PyObject* future) {
    asgi_call* c = call_of(self);
    if (!c) return nullptr;
    c->pull(future);
    Py_RETURN_NONE;
}

PyObject* ch_pathsend(PyObject* self, PyObject* path) {
    asgi_call* c = call_of(self);
    if (!c || !c->pathsend(path)) return nullptr;
    Py_RETURN_NONE;
}

PyObject* ch_wait_disconnect(PyObject* self, PyObject* future) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    // A call that is over has nothing left to wait for.
    return PyBool_FromLong(c ? c->wait_disconnect(future) : 0);
}

PyObject* ch_fail(PyObject* self, PyObject* message) {
    if (asgi_call* c = reinterpret_cast<channel_object*>(self)->call) c->fail(message);
    Py_RETURN_NONE;
}

PyObject* ch_done(PyObject* self, PyObject* task) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    if (c) c->on_task_done(task);  // detaches the channel
    Py_RETURN_NONE;
}

PyObject* ch_end(PyObject* self, PyObject*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    if (c) c->on_serve_end();  // detaches the channel
    Py_RETURN_NONE;
}

PyObject* ch_gone(PyObject* self, void*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    return PyBool_FromLong(!c || c->gone());
}

PyObject* ch_disconnected(PyObject* self, void*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    return PyBool_FromLong(!c || c->disconnected());
}

PyObject* ch_started(PyObject* self, void*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    return PyBool_FromLong(c && c->started());
}

// A call that is over has nothing more to send.
PyObject* ch_ended(PyObject* self, void*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    return PyBool_FromLong(!c || c->ended());
}

// The channel is the app's send(): one positional argument, the message.
PyObject* ch_call(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "send() takes one argument, the message");
        return nullptr;
    }
    asgi_call* c = call_of(self);
    return c ? c->send_message(self, args[0]) : nullptr;
}

PyMethodDef methods[] = {
    {"body", ch_body, METH_NOARGS, "the request body"},
    {"pull", ch_pull, METH_O, "resolve the future with the next body piece: (bytes, last), or None"},
    {"pathsend", ch_pathsend, METH_O, "http.response.pathsend: the whole file, with sendfile"},
    {"wait_disconnect", ch_wait_disconnect, METH_O, "False: already disconnected; else resolves the future"},
    {"fail", ch_fail, METH_O, "log the message (if any); 500 before the start, abort after"},
    {"done", ch_done, METH_O, "the Task's done callback"},
    {"end", ch_end, METH_NOARGS, "the coroutine's last step: finish now, drop the done callback"},
    {nullptr, nullptr, 0, nullptr}};

PyObject* ch_streamed(PyObject* self, void*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    return PyBool_FromLong(c && c->streamed());
}

PyGetSetDef getset[] = {{"gone", ch_gone, nullptr, "the client went away", nullptr},
                        {"disconnected", ch_disconnected, nullptr,
                         "the client went away or half-closed: receive() says http.disconnect", nullptr},
                        {"started", ch_started, nullptr, "http.response.start was taken", nullptr},
                        {"ended", ch_ended, nullptr, "the response is complete (or failed)", nullptr},
                        {"streamed", ch_streamed, nullptr, "the body is pulled piece by piece", nullptr},
                        {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject channel_type = python::blank_type("m0.asgi_channel", sizeof(channel_object));

}  // namespace

bool init_channel_type() {
    if (channel_type.tp_flags & Py_TPFLAGS_READY) return true;
    channel_type.tp_methods = methods;
    channel_type.tp_getset = getset;
    channel_type.tp_dealloc = [](PyObject* self) { PyObject_Free(self); };
    channel_type.tp_call = PyVectorcall_Call;
    channel_type.tp_vectorcall_offset = offsetof(channel_object, vectorcall);
    channel_type.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    return PyType_Ready(&channel_type) == 0;
}

PyObject* new_channel(asgi_call* call) {
    auto* ch = PyObject_New(channel_object, &channel_type);
    if (ch) {
        ch->call = call;
        ch->vectorcall = ch_call;
    }
    return reinterpret_cast<PyObject*>(ch);
}

void detach_channel(PyObject* channel) { reinterpret_cast<channel_object*>(channel)->call = nullptr; }

bool channel_is_detached(PyObject* channel) { return reinterpret_cast<channel_object*>(channel)->call == nullptr; }

}  // namespace m0::asgi
