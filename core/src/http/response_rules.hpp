#pragma once
// What a response obeys whichever engine writes it.
#include <optional>
#include <string_view>

#include <m0/http.hpp>

namespace m0::http::detail {

// A handler's response or trailer field as either engine sends it: its
// value without the whitespace around it (RFC 9110 5.5: that is no part of
// the value, and HTTP/2 forbids it, RFC 9113 8.2.1; Django writes every
// Set-Cookie value with a leading space), or nullopt when the field is
// dropped: a name that is empty or no token, a value holding CR, LF or NUL
// (a handler's data would split the response), a field the engine owns
// (framing, connection), and over HTTP/2 the connection-specific fields
// (Upgrade, Proxy-Connection, TE: RFC 9113 8.2.2).
std::optional<std::string_view> sendable_field(const response_header& field, bool http2) noexcept;

// Statuses whose responses never carry a body (RFC 9110 6.4.1).
constexpr bool status_has_body(unsigned status) noexcept {
    return status >= 200 && status != 204 && status != 304;
}

}  // namespace m0::http::detail
