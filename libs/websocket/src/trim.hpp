#pragma once
// Optional white space (RFC 9110 OWS) around list elements and parameters.
#include <string_view>

namespace m0::websocket::detail {

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace m0::websocket::detail
