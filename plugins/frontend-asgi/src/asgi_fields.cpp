#include "asgi_fields.hpp"

#include <charconv>
#include <string>

#include <m0/python/ref.hpp>

namespace m0::asgi {

bool bytes_view(PyObject* o, std::string_view& out, const char* what) {
    if (PyBytes_Check(o)) {
        out = {PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o))};
        return true;
    }
    if (PyByteArray_Check(o)) {
        out = {PyByteArray_AS_STRING(o), static_cast<std::size_t>(PyByteArray_GET_SIZE(o))};
        return true;
    }
    PyErr_Format(PyExc_TypeError, "%s must be bytes, not %.100s", what, Py_TYPE(o)->tp_name);
    return false;
}

bool read_status(PyObject* status, unsigned& out, const char* what) {
    if (!PyLong_Check(status)) {
        PyErr_Format(PyExc_TypeError, "%s status must be an int, not %.100s", what, Py_TYPE(status)->tp_name);
        return false;
    }
    const long code = PyLong_AsLong(status);
    if (code < 200 || code > 999) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s status %ld is not in 200..999", what, code);
        return false;
    }
    out = static_cast<unsigned>(code);
    return true;
}

bool read_fields(PyObject* fields, std::vector<http::response_header>& out, std::optional<std::uint64_t>* length) {
    python::py_ref it(PyObject_GetIter(fields));
    if (!it) return false;
    while (python::py_ref item{PyIter_Next(it.get())}) {
        python::py_ref seq(PySequence_Fast(item.get(), "each header must be a [name, value] pair"));
        if (!seq) return false;
        if (PySequence_Fast_GET_SIZE(seq.get()) != 2) {
            PyErr_SetString(PyExc_ValueError, "each header must be a [name, value] pair");
            return false;
        }
        std::string_view name, value;
        if (!bytes_view(PySequence_Fast_GET_ITEM(seq.get(), 0), name, "a header name") ||
            !bytes_view(PySequence_Fast_GET_ITEM(seq.get(), 1), value, "a header value"))
            return false;
        if (!http::is_token(name)) {
            PyErr_Format(PyExc_ValueError, "invalid header name %R", PySequence_Fast_GET_ITEM(seq.get(), 0));
            return false;
        }
        if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
            PyErr_Format(PyExc_ValueError, "header %R has CR, LF or NUL in its value", PySequence_Fast_GET_ITEM(seq.get(), 0));
            return false;
        }
        if (length && http::ascii_iequals(name, "content-length")) {
            std::uint64_t n = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
            if (ec != std::errc() || p != value.data() + value.size()) {
                PyErr_Format(PyExc_ValueError, "invalid content-length %R", PySequence_Fast_GET_ITEM(seq.get(), 1));
                return false;
            }
            *length = n;
            continue;  // the engine writes its own
        }
        out.push_back({std::string(name), std::string(value)});
    }
    return !PyErr_Occurred();
}

}  // namespace m0::asgi
