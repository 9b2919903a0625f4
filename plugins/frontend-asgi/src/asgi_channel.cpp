#include "asgi_channel.hpp"

#include <m0/python/static_type.hpp>

#include "asgi_call.hpp"

namespace m0::asgi {

namespace {

struct channel_object {
    PyObject_HEAD
    asgi_call* call;
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

PyObject* ch_start(PyObject* self, PyObject* args) {
    PyObject *status, *headers;
    int trailers = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &status, &headers, &trailers)) return nullptr;
    asgi_call* c = call_of(self);
    if (!c || !c->start(status, headers, trailers != 0)) return nullptr;
    Py_RETURN_NONE;
}

PyObject* ch_trailers(PyObject* self, PyObject* args) {
    PyObject* headers;
    int more;
    if (!PyArg_ParseTuple(args, "Op", &headers, &more)) return nullptr;
    asgi_call* c = call_of(self);
    if (!c || !c->trailers(headers, more != 0)) return nullptr;
    Py_RETURN_NONE;
}

PyObject* ch_send(PyObject* self, PyObject* args) {
    PyObject* data;
    int more;
    if (!PyArg_ParseTuple(args, "Op", &data, &more)) return nullptr;
    asgi_call* c = call_of(self);
    if (!c) return nullptr;
    const int wait = c->send(data, more != 0);
    if (wait < 0) return nullptr;
    return PyBool_FromLong(wait);
}

PyObject* ch_pathsend(PyObject* self, PyObject* path) {
    asgi_call* c = call_of(self);
    if (!c || !c->pathsend(path)) return nullptr;
    Py_RETURN_NONE;
}

PyObject* ch_wait_room(PyObject* self, PyObject* future) {
    asgi_call* c = call_of(self);
    if (!c) return nullptr;
    c->wait_room(future);
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

PyObject* ch_gone(PyObject* self, void*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    return PyBool_FromLong(!c || c->gone());
}

PyMethodDef methods[] = {
    {"body", ch_body, METH_NOARGS, "the request body"},
    {"pull", ch_pull, METH_O, "resolve the future with the next body piece: (bytes, last), or None"},
    {"start", ch_start, METH_VARARGS, "http.response.start"},
    {"trailers", ch_trailers, METH_VARARGS, "http.response.trailers"},
    {"send", ch_send, METH_VARARGS, "http.response.body; True: await wait_room"},
    {"pathsend", ch_pathsend, METH_O, "http.response.pathsend: the whole file, with sendfile"},
    {"wait_room", ch_wait_room, METH_O, "resolve the future when the output has room"},
    {"wait_disconnect", ch_wait_disconnect, METH_O, "False: already disconnected; else resolves the future"},
    {"fail", ch_fail, METH_O, "log the message (if any); 500 before the start, abort after"},
    {"done", ch_done, METH_O, "the Task's done callback"},
    {nullptr, nullptr, 0, nullptr}};

PyObject* ch_streamed(PyObject* self, void*) {
    asgi_call* c = reinterpret_cast<channel_object*>(self)->call;
    return PyBool_FromLong(c && c->streamed());
}

PyGetSetDef getset[] = {{"gone", ch_gone, nullptr, "the client went away", nullptr},
                        {"streamed", ch_streamed, nullptr, "the body is pulled piece by piece", nullptr},
                        {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject channel_type = python::blank_type("m0.asgi_channel", sizeof(channel_object));

}  // namespace

bool init_channel_type() {
    if (channel_type.tp_flags & Py_TPFLAGS_READY) return true;
    channel_type.tp_methods = methods;
    channel_type.tp_getset = getset;
    channel_type.tp_dealloc = [](PyObject* self) { PyObject_Free(self); };
    return PyType_Ready(&channel_type) == 0;
}

PyObject* new_channel(asgi_call* call) {
    auto* ch = PyObject_New(channel_object, &channel_type);
    if (ch) ch->call = call;
    return reinterpret_cast<PyObject*>(ch);
}

void detach_channel(PyObject* channel) { reinterpret_cast<channel_object*>(channel)->call = nullptr; }

}  // namespace m0::asgi
