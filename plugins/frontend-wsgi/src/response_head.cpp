// start_response argument checks.
#include "response_head.hpp"

#include <charconv>
#include <string_view>

namespace m0::wsgi {

namespace {

// Latin-1 view of a str without copying; false (TypeError/ValueError set)
// for a non-str or a character above U+00FF.
bool latin1_view(PyObject* s, const char* what, std::string_view& out) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", what, Py_TYPE(s)->tp_name);
        return false;
    }
    if (PyUnicode_READY(s) < 0) return false;
    if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND) {
        PyErr_Format(PyExc_ValueError, "%s %R is not latin-1", what, s);
        return false;
    }
    out = std::string_view(static_cast<const char*>(PyUnicode_DATA(s)),
                           static_cast<std::size_t>(PyUnicode_GET_LENGTH(s)));
    return true;
}

}  // namespace

bool parse_status(PyObject* status, unsigned& out) {
    std::string_view s;
    if (!latin1_view(status, "status", s)) return false;
    bool ok = s.size() >= 4 && s[3] == ' ';
    unsigned code = 0;
    if (ok) {
        auto [p, ec] = std::from_chars(s.data(), s.data() + 3, code);
        ok = ec == std::errc() && p == s.data() + 3 && code >= 100 && code <= 599;
    }
    for (char c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ok = false;
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "invalid status %R: expected '<3 digits> <reason>'", status);
        return false;
    }
    out = code;
    return true;
}

bool parse_headers(PyObject* headers, response_head& out) {
    if (!PyList_Check(headers)) {
        PyErr_Format(PyExc_TypeError, "headers must be a list, not %.100s", Py_TYPE(headers)->tp_name);
        return false;
    }
    out.headers.clear();
    out.content_length.reset();
    Py_ssize_t n = PyList_GET_SIZE(headers);
    out.headers.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* item = PyList_GET_ITEM(headers, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_Format(PyExc_TypeError, "header %R must be a (name, value) tuple", item);
            return false;
        }
        std::string_view name, value;
        if (!latin1_view(PyTuple_GET_ITEM(item, 0), "header name", name) ||
            !latin1_view(PyTuple_GET_ITEM(item, 1), "header value", value))
            return false;
        if (!http::is_token(name)) {
            PyErr_Format(PyExc_ValueError, "invalid header name %R", PyTuple_GET_ITEM(item, 0));
            return false;
        }
        for (unsigned char c : value) {
            if (c == '\r' || c == '\n' || c == '\0') {
                PyErr_Format(PyExc_ValueError, "header %R: value contains CR, LF or NUL", PyTuple_GET_ITEM(item, 0));
                return false;
            }
        }
        if (http::ascii_iequals(name, "Content-Length")) {
            std::uint64_t v = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (value.empty() || ec != std::errc() || p != value.data() + value.size()) {
                PyErr_Format(PyExc_ValueError, "invalid Content-Length %R", PyTuple_GET_ITEM(item, 1));
                return false;
            }
            out.content_length = v;
            continue;
        }
        if (http::is_engine_owned_header(name)) continue;
        out.headers.push_back({std::string(name), std::string(value)});
    }
    return true;
}

}  // namespace m0::wsgi
