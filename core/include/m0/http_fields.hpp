#pragma once
// Field syntax (RFC 9110), shared by every handler that validates or
// compares header names, so frontends agree with the engine. Included by
// http.hpp.
#include <cstddef>
#include <string_view>

namespace m0::http {

// ASCII case-insensitive equality (header names, tokens; locale-free).
constexpr bool ascii_iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
        if (x != y) return false;
    }
    return true;
}

// A non-empty RFC 9110 token (tchar+): method names, field names.
constexpr bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s) {
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
    }
    return true;
}

// Headers the engine writes itself: framing and connection management.
// A handler's copy is dropped (a frontend may refuse it in config instead).
constexpr bool is_engine_owned_header(std::string_view name) noexcept {
    for (std::string_view owned :
         {"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Date", "Server"}) {
        if (ascii_iequals(name, owned)) return true;
    }
    return false;
}

}  // namespace m0::http
