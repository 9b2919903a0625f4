// wsgi.input, start_response, write() and wsgi.file_wrapper as C types.
#include "wsgi_objects.hpp"

#include <cstring>

#include <m0/python/static_type.hpp>

#include "body_reader.hpp"
#include "wsgi_call.hpp"

namespace m0::wsgi {

namespace {

// ---- wsgi.input ----------------------------------------------------------

// Parses the optional size argument of read/readline/readlines: None or a
// negative number means "no limit" (-1).
bool size_arg(PyObject* const* args, Py_ssize_t nargs, const char* fn, Py_ssize_t& out) {
    out = -1;
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most 1 argument (%zd given)", fn, nargs);
        return false;
    }
    if (nargs == 0 || args[0] == Py_None) return true;
    out = PyNumber_AsSsize_t(args[0], PyExc_OverflowError);
    if (out == -1 && PyErr_Occurred()) return false;
    if (out < 0) out = -1;
    return true;
}

PyObject* take(input_object* self, Py_ssize_t n) {
    PyObject* r = PyBytes_FromStringAndSize(self->data + self->pos, n);
    if (r) self->pos += n;
    return r;
}

PyObject* input_read(PyObject* o, PyObject* const* args, Py_ssize_t nargs) {
    auto* self = reinterpret_cast<input_object*>(o);
    Py_ssize_t n;
    if (!size_arg(args, nargs, "read", n)) return nullptr;
    if (self->reader) return self->reader->read(n);
    Py_ssize_t left = self->size - self->pos;
    return take(self, n < 0 || n > left ? left : n);
}

PyObject* read_line(input_object* self, Py_ssize_t limit) {
    if (self->reader) return self->reader->readline(limit);
    Py_ssize_t left = self->size - self->pos;
    if (limit >= 0 && limit < left) left = limit;
    const char* start = self->data + self->pos;
    const void* nl = left > 0 ? std::memchr(start, '\n', static_cast<std::size_t>(left)) : nullptr;
    Py_ssize_t n = nl ? static_cast<const char*>(nl) - start + 1 : left;
    return take(self, n);
}

PyObject* input_readline(PyObject* o, PyObject* const* args, Py_ssize_t nargs) {
    Py_ssize_t n;
    if (!size_arg(args, nargs, "readline", n)) return nullptr;
    return read_line(reinterpret_cast<input_object*>(o), n);
}

PyObject* input_readlines(PyObject* o, PyObject* const* args, Py_ssize_t nargs) {
    auto* self = reinterpret_cast<input_object*>(o);
    Py_ssize_t hint;
    if (!size_arg(args, nargs, "readlines", hint)) return nullptr;
    PyObject* list = PyList_New(0);
    if (!list) return nullptr;
    Py_ssize_t total = 0;
    while (hint <= 0 || total < hint) {
        if (!self->reader && self->pos >= self->size) break;
        PyObject* line = read_line(self, -1);
        if (!line || (PyBytes_GET_SIZE(line) > 0 && PyList_Append(list, line) < 0)) {
            Py_XDECREF(line);
            Py_DECREF(list);
            return nullptr;
        }
        const Py_ssize_t size = PyBytes_GET_SIZE(line);
        Py_DECREF(line);
        if (size == 0) break;  // a streamed body's end
        total += size;
    }
    return list;
}

PyObject* input_iter(PyObject* o) {
    Py_INCREF(o);
    return o;
}

PyObject* input_next(PyObject* o) {
    auto* self = reinterpret_cast<input_object*>(o);
    if (!self->reader) {
        if (self->pos >= self->size) return nullptr;  // StopIteration
        return read_line(self, -1);
    }
    PyObject* line = self->reader->readline(-1);
    if (line && PyBytes_GET_SIZE(line) == 0) {
        Py_DECREF(line);
        return nullptr;  // StopIteration
    }
    return line;
}

PyMethodDef input_methods[] = {
    {"read", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(input_read)), METH_FASTCALL,
     "read([size]) -> bytes, never past the request body"},
    {"readline", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(input_readline)), METH_FASTCALL,
     "readline([size]) -> bytes up to and including a newline"},
    {"readlines", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(input_readlines)), METH_FASTCALL,
     "readlines([hint]) -> list of lines"},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject input_type = [] {
    PyTypeObject t = python::blank_type("m0.wsgi_input", sizeof(input_object));
    t.tp_flags = Py_TPFLAGS_DEFAULT;
    t.tp_doc = "The request body (wsgi.input).";
    t.tp_iter = input_iter;
    t.tp_iternext = input_next;
    t.tp_methods = input_methods;
    return t;
}();

// ---- start_response and write() -----------------------------------------

PyObject* ended_error(const char* what) {
    PyErr_Format(PyExc_RuntimeError, "%s called after its request ended", what);
    return nullptr;
}

PyObject* start_response_call(PyObject* o, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<callable_object*>(o);
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject* exc_info = nargs >= 3 ? args[2] : Py_None;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; ++i) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, i);
        if (nargs == 2 && PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "exc_info") == 0) {
            exc_info = args[nargs + i];
        } else {
            PyErr_Format(PyExc_TypeError, "start_response() got an unexpected keyword argument %R", key);
            return nullptr;
        }
    }
    if (nargs < 2 || nargs > 3) {
        PyErr_Format(PyExc_TypeError, "start_response() takes 2 or 3 arguments (%zd given)", nargs);
        return nullptr;
    }
    if (!self->call) return ended_error("start_response()");
    return self->call->start_response(args[0], args[1], exc_info);
}

PyObject* writer_call(PyObject* o, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<callable_object*>(o);
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "write() takes exactly one bytes argument");
        return nullptr;
    }
    if (!self->call) return ended_error("write()");
    return self->call->write(args[0]);
}

PyTypeObject make_callable_type(const char* name, const char* doc) {
    PyTypeObject t = python::blank_type(name, sizeof(callable_object));
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    t.tp_vectorcall_offset = offsetof(callable_object, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_doc = doc;
    return t;
}

PyTypeObject start_response_type = make_callable_type("m0.start_response", "PEP 3333 start_response.");
PyTypeObject writer_type = make_callable_type("m0.write", "PEP 3333 write() callable.");

// ---- wsgi.file_wrapper ---------------------------------------------------

PyObject* fw_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* kwlist[] = {"filelike", "blksize", nullptr};
    PyObject* filelike = nullptr;
    Py_ssize_t blksize = 8192;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|n:file_wrapper", const_cast<char**>(kwlist), &filelike,
                                     &blksize))
        return nullptr;
    if (blksize <= 0) blksize = 8192;
    auto* self = reinterpret_cast<file_wrapper_object*>(type->tp_alloc(type, 0));
    if (!self) return nullptr;
    Py_INCREF(filelike);
    self->filelike = filelike;
    self->blksize = blksize;
    return reinterpret_cast<PyObject*>(self);
}

void fw_dealloc(PyObject* o) {
    auto* self = reinterpret_cast<file_wrapper_object*>(o);
    Py_XDECREF(self->filelike);
    Py_TYPE(o)->tp_free(o);
}

PyObject* fw_next(PyObject* o) {
    auto* self = reinterpret_cast<file_wrapper_object*>(o);
    PyObject* data = PyObject_CallMethod(self->filelike, "read", "n", self->blksize);
    if (!data) return nullptr;
    if (PyBytes_Check(data) && PyBytes_GET_SIZE(data) == 0) {
        Py_DECREF(data);
        return nullptr;  // StopIteration
    }
    return data;
}

PyObject* fw_close(PyObject* o, PyObject*) {
    auto* self = reinterpret_cast<file_wrapper_object*>(o);
    PyObject* close = PyObject_GetAttrString(self->filelike, "close");
    if (!close) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject* r = PyObject_CallNoArgs(close);
    Py_DECREF(close);
    return r;
}

PyMethodDef fw_methods[] = {
    {"close", fw_close, METH_NOARGS, "Closes the wrapped file."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

PyTypeObject file_wrapper_type = [] {
    PyTypeObject t = python::blank_type("m0.file_wrapper", sizeof(file_wrapper_object));
    t.tp_flags = Py_TPFLAGS_DEFAULT;
    t.tp_doc = "wsgi.file_wrapper(filelike, blksize=8192): sent with sendfile when it has a real file.";
    t.tp_new = fw_new;
    t.tp_dealloc = fw_dealloc;
    t.tp_iter = PyObject_SelfIter;
    t.tp_iternext = fw_next;
    t.tp_methods = fw_methods;
    return t;
}();

bool init_object_types() {
    for (PyTypeObject* t : {&input_type, &start_response_type, &writer_type, &file_wrapper_type})
        if (PyType_Ready(t) < 0) return false;
    return true;
}

// ---- per-thread recycling --------------------------------------------------

namespace {

struct thread_cache {
    input_object* input = nullptr;
    callable_object* start_response = nullptr;
    callable_object* writer = nullptr;
};
thread_local thread_cache cache;

// Reuses `slot` when only the cache holds it, else replaces it.
template <class T>
T* recycle(T*& slot, PyTypeObject* type) {
    if (slot && Py_REFCNT(slot) == 1) return slot;
    Py_XDECREF(slot);
    slot = PyObject_New(T, type);
    return slot;
}

}  // namespace

bool request_objects::acquire(wsgi_call* call, const char* body, std::size_t body_size, body_reader* reader) {
    input_ = recycle(cache.input, &input_type);
    start_response_ = recycle(cache.start_response, &start_response_type);
    writer_ = recycle(cache.writer, &writer_type);
    if (!input_ || !start_response_ || !writer_) return false;
    input_->data = body;
    input_->size = static_cast<Py_ssize_t>(body_size);
    input_->pos = 0;
    input_->reader = reader;
    start_response_->vectorcall = start_response_call;
    start_response_->call = call;
    writer_->vectorcall = writer_call;
    writer_->call = call;
    return true;
}

void request_objects::release() noexcept {
    if (input_) {
        input_->data = nullptr;
        input_->size = input_->pos = 0;
        input_->reader = nullptr;
    }
    if (start_response_) start_response_->call = nullptr;
    if (writer_) writer_->call = nullptr;
}

void request_objects::clear_thread_cache() noexcept {
    Py_CLEAR(cache.input);
    Py_CLEAR(cache.start_response);
    Py_CLEAR(cache.writer);
}

}  // namespace m0::wsgi
