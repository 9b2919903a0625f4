#pragma once
// Validating what an application passes to start_response: the status line
// and the header list. Nothing invalid reaches the wire (no CR/LF injection).
#include <Python.h>

#include <array>
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

// The statuses and header names that passed the checks, by object: an
// application passes the same str objects (its constants) on every call, so
// each is checked once. A reference is held to each one remembered, so its
// address cannot come back as another string while it is here. GIL held.
class checked_strings {
public:
    enum class name_kind : std::uint8_t { unknown, plain, content_length, engine_owned };

    checked_strings() = default;
    ~checked_strings();  // GIL held
    checked_strings(const checked_strings&) = delete;
    checked_strings& operator=(const checked_strings&) = delete;

    name_kind name(PyObject* s) const noexcept;
    void remember_name(PyObject* s, name_kind kind) noexcept;
    // 0: not remembered.
    unsigned status(PyObject* s) const noexcept;
    void remember_status(PyObject* s, unsigned code) noexcept;

private:
    template <class T>
    struct entry {
        PyObject* s = nullptr;
        T value{};
    };
    static std::size_t slot(PyObject* s, std::size_t size) noexcept {
        return (reinterpret_cast<std::uintptr_t>(s) >> 4) % size;
    }
    std::array<entry<name_kind>, 64> names_{};
    std::array<entry<unsigned>, 8> statuses_{};
};

// Both return false with a Python exception (ValueError/TypeError) set.
// `checked` (may be null) skips the checks of strings seen before.
// Status: a str "NNN Reason" (100..599, no control characters).
bool parse_status(PyObject* status, unsigned& out, checked_strings* checked = nullptr);
// Headers: a list of (str, str) tuples; names are HTTP tokens, values carry
// no CR, LF or NUL; both latin-1. Entries already in out.headers are
// overwritten in place (their strings' capacity reused); on return it holds
// the accepted headers only.
bool parse_headers(PyObject* headers, response_head& out, checked_strings* checked = nullptr);

}  // namespace m0::wsgi
