#pragma once
// The C types a WSGI application sees: wsgi.input, start_response, the
// write() callable and wsgi.file_wrapper. Defined in C so that a request
// creates no Python class, and recycled per thread when the application kept
// no reference to them. GIL held for everything here.
#include <Python.h>

#include <cstddef>

namespace m0::wsgi {

class wsgi_call;
class body_reader;

// Readies the types; false with a Python exception set.
bool init_object_types();

// wsgi.input over a body owned by the caller, valid until detach: the
// whole body in [data, data + size), or a streamed one read through
// `reader` when that is set.
struct input_object {
    PyObject_HEAD
    const char* data;
    Py_ssize_t size;
    Py_ssize_t pos;
    body_reader* reader;
};

struct callable_object {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    wsgi_call* call;  // null once the request is over
};

struct file_wrapper_object {
    PyObject_HEAD
    PyObject* filelike;
    Py_ssize_t blksize;
};

extern PyTypeObject file_wrapper_type;

// One request's objects, taken from (and given back to) the calling
// thread's cache.
class request_objects {
public:
    // False with a Python exception set.
    bool acquire(wsgi_call* call, const char* body, std::size_t body_size, body_reader* reader);
    // Detaches the objects from the request: an application that kept one
    // finds an empty input / a start_response that raises.
    void release() noexcept;

    PyObject* input() const { return reinterpret_cast<PyObject*>(input_); }
    PyObject* start_response() const { return reinterpret_cast<PyObject*>(start_response_); }
    PyObject* writer() const { return reinterpret_cast<PyObject*>(writer_); }

    // Drops this thread's cached objects (thread exit).
    static void clear_thread_cache() noexcept;

private:
    input_object* input_ = nullptr;
    callable_object* start_response_ = nullptr;
    callable_object* writer_ = nullptr;
};

}  // namespace m0::wsgi
