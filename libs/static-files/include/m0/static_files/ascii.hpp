#pragma once
// ASCII helpers for header names, tokens and list elements (locale-free).
#include <string_view>

#include <m0/http.hpp>

namespace m0::static_files {

using http::ascii_iequals;

// Strips optional whitespace (SP / HTAB) at both ends.
constexpr std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace m0::static_files
