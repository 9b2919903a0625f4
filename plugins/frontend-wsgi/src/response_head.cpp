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

template <class Entry>
void remember(Entry& e, PyObject* s, decltype(Entry::value) value) noexcept {
    Py_INCREF(s);
    Py_XSETREF(e.s, s);
    e.value = value;
}

}  // namespace

checked_strings::~checked_strings() {
    for (auto& e : names_) Py_XDECREF(e.s);
    for (auto& e : statuses_) Py_XDECREF(e.s);
}

checked_strings::name_kind checked_strings::name(PyObject* s) const noexcept {
    const auto& e = names_[slot(s, names_.size())];
    return e.s == s ? e.value : name_kind::unknown;
}

void checked_strings::remember_name(PyObject* s, name_kind kind) noexcept {
    remember(names_[slot(s, names_.size())], s, kind);
}

unsigned checked_strings::status(PyObject* s) const noexcept {
    const auto& e = statuses_[slot(s, statuses_.size())];
    return e.s == s ? e.value : 0;
}

void checked_strings::remember_status(PyObject* s, unsigned code) noexcept {
    remember(statuses_[slot(s, statuses_.size())], s, code);
}

bool parse_status(PyObject* status, unsigned& out, checked_strings* checked) {
    if (checked) {
        if (unsigned code = checked->status(status)) {
            out = code;
            return true;
        }
    }
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
    // Only exact str objects: a subclass's value could change under us.
    if (checked && PyUnicode_CheckExact(status)) checked->remember_status(status, code);
    return true;
}

bool parse_headers(PyObject* headers, response_head& out, checked_strings* checked) {
    using kind = checked_strings::name_kind;
    if (!PyList_Check(headers)) {
        PyErr_Format(PyExc_TypeError, "headers must be a list, not %.100s", Py_TYPE(headers)->tp_name);
        return false;
    }
    out.content_length.reset();
    // Entries already there are overwritten in place, so that their strings'
    // capacity is reused (response_buffers); the rest is cut off at the end.
    std::size_t used = 0;
    auto kept = [&out, &used](bool ok) {
        out.headers.resize(used);
        return ok;
    };
    Py_ssize_t n = PyList_GET_SIZE(headers);
    out.headers.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* item = PyList_GET_ITEM(headers, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_Format(PyExc_TypeError, "header %R must be a (name, value) tuple", item);
            return kept(false);
        }
        PyObject* name_obj = PyTuple_GET_ITEM(item, 0);
        std::string_view name, value;
        if (!latin1_view(name_obj, "header name", name) ||
            !latin1_view(PyTuple_GET_ITEM(item, 1), "header value", value))
            return kept(false);
        kind k = checked ? checked->name(name_obj) : kind::unknown;
        if (k == kind::unknown) {
            if (!http::is_token(name)) {
                PyErr_Format(PyExc_ValueError, "invalid header name %R", name_obj);
                return kept(false);
            }
            k = http::ascii_iequals(name, "Content-Length") ? kind::content_length
                : http::is_engine_owned_header(name)        ? kind::engine_owned
                                                            : kind::plain;
            if (checked && PyUnicode_CheckExact(name_obj)) checked->remember_name(name_obj, k);
        }
        for (unsigned char c : value) {
            if (c == '\r' || c == '\n' || c == '\0') {
                PyErr_Format(PyExc_ValueError, "header %R: value contains CR, LF or NUL", name_obj);
                return kept(false);
            }
        }
        if (k == kind::content_length) {
            std::uint64_t v = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (value.empty() || ec != std::errc() || p != value.data() + value.size()) {
                PyErr_Format(PyExc_ValueError, "invalid Content-Length %R", PyTuple_GET_ITEM(item, 1));
                return kept(false);
            }
            out.content_length = v;
            continue;
        }
        if (k == kind::engine_owned) continue;
        if (used < out.headers.size()) {
            out.headers[used].name.assign(name);
            out.headers[used].value.assign(value);
        } else {
            out.headers.push_back({std::string(name), std::string(value)});
        }
        ++used;
    }
    return kept(true);
}

}  // namespace m0::wsgi
