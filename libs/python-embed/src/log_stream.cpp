// m0.log_stream: a write-only text stream into m0's log.
#include <m0/python/log_stream.hpp>

#include <string>

#include <m0/python/static_type.hpp>

namespace m0::python {

namespace {

struct log_stream_object {
    PyObject_HEAD
    m0::log::level level;
    std::string* pending;  // text after the last newline
};

void emit_lines(log_stream_object* self, bool flush_all) {
    std::string& buf = *self->pending;
    std::size_t start = 0;
    for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n', start)) {
        m0::log::write(self->level, std::string_view(buf).substr(start, nl - start));
        start = nl + 1;
    }
    buf.erase(0, start);
    if (flush_all && !buf.empty()) {
        m0::log::write(self->level, buf);
        buf.clear();
    }
}

PyObject* ls_write(PyObject* self_obj, PyObject* arg) {
    auto* self = reinterpret_cast<log_stream_object*>(self_obj);
    Py_ssize_t n = 0;
    const char* p = nullptr;
    if (PyUnicode_Check(arg)) {
        p = PyUnicode_AsUTF8AndSize(arg, &n);
    } else if (PyBytes_Check(arg)) {
        p = PyBytes_AS_STRING(arg);
        n = PyBytes_GET_SIZE(arg);
    } else {
        PyErr_Format(PyExc_TypeError, "write() argument must be str, not %.100s", Py_TYPE(arg)->tp_name);
        return nullptr;
    }
    if (!p) return nullptr;
    self->pending->append(p, static_cast<std::size_t>(n));
    emit_lines(self, false);
    return PyLong_FromSsize_t(n);
}

PyObject* ls_writelines(PyObject* self, PyObject* seq) {
    PyObject* it = PyObject_GetIter(seq);
    if (!it) return nullptr;
    while (PyObject* line = PyIter_Next(it)) {
        PyObject* r = ls_write(self, line);
        Py_DECREF(line);
        if (!r) {
            Py_DECREF(it);
            return nullptr;
        }
        Py_DECREF(r);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return nullptr;
    Py_RETURN_NONE;
}

PyObject* ls_flush(PyObject* self, PyObject*) {
    emit_lines(reinterpret_cast<log_stream_object*>(self), true);
    Py_RETURN_NONE;
}

void ls_dealloc(PyObject* self) {
    auto* s = reinterpret_cast<log_stream_object*>(self);
    emit_lines(s, true);
    delete s->pending;
    Py_TYPE(self)->tp_free(self);
}

PyMethodDef ls_methods[] = {
    {"write", ls_write, METH_O, "Write text to the m0 log."},
    {"writelines", ls_writelines, METH_O, "Write each string of an iterable."},
    {"flush", ls_flush, METH_NOARGS, "Log any partial line."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject log_stream_type = [] {
    PyTypeObject t = blank_type("m0.log_stream", sizeof(log_stream_object));
    t.tp_dealloc = ls_dealloc;
    t.tp_flags = Py_TPFLAGS_DEFAULT;
    t.tp_doc = "Text stream into the m0 log.";
    t.tp_methods = ls_methods;
    return t;
}();

}  // namespace

PyObject* new_log_stream(m0::log::level level) {
    if (!(log_stream_type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&log_stream_type) < 0) return nullptr;
    auto* self = PyObject_New(log_stream_object, &log_stream_type);
    if (!self) return nullptr;
    self->level = level;
    self->pending = new std::string;
    return reinterpret_cast<PyObject*>(self);
}

}  // namespace m0::python
