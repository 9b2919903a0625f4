#pragma once
// Reading what an application sends: bytes-like values and ASGI header
// lists, validated for the wire. GIL held.
#include <Python.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <m0/http.hpp>

namespace m0::asgi {

// Borrowed bytes of a bytes-like object; false with TypeError set (`what`
// names the value in the message).
bool bytes_view(PyObject* o, std::string_view& out, const char* what);

// A response status (an int in 200..999); false with TypeError or
// ValueError set naming `what` ("http.response.start").
bool read_status(PyObject* status, unsigned& out, const char* what);

// Reads an ASGI header list ([name, value] pairs of bytes) into `out`;
// `length` (if given) takes a content-length instead of `out`. False with
// a Python exception set on a malformed list or field.
bool read_fields(PyObject* fields, std::vector<http::response_header>& out, std::optional<std::uint64_t>* length);

// Calls fn(item) for each comma-separated element of every `name` header of
// `req`, in arrival order, trimmed of spaces and tabs, empty ones skipped;
// stops early (returning true) when fn returns true.
template <class F>
bool any_list_item(const http::request& req, std::string_view name, F fn) {
    for (const auto& h : req.headers) {
        if (!http::ascii_iequals(h.name, name)) continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            const auto comma = v.find(',');
            std::string_view item = v.substr(0, comma);
            while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
            while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
            if (!item.empty() && fn(item)) return true;
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
    return false;
}

}  // namespace m0::asgi
