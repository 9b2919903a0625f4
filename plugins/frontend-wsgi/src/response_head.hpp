#pragma once
// Validating what an application passes to start_response: the status line
// and the header list. Nothing invalid reaches the wire (no CR/LF injection).
#include <Python.h>

#include <cstdint>
#include <optional>
#include <vector>

#include <m0/http.hpp>

namespace m0::wsgi {

struct response_head {
    unsigned status = 0;
    std::vector<http::response_header> headers;  // without the ones the engine owns
    std::optional<std::uint64_t> content_length;   // the app's Content-Length, if any
};

// Both return false with a Python exception (ValueError/TypeError) set.
// Status: a str "NNN Reason" (100..599, no control characters).
bool parse_status(PyObject* status, unsigned& out);
// Headers: a list of (str, str) tuples; names are HTTP tokens, values carry
// no CR, LF or NUL; both latin-1.
bool parse_headers(PyObject* headers, response_head& out);

}  // namespace m0::wsgi
