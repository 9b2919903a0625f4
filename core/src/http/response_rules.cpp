#include "http/response_rules.hpp"

#include <m0/http_fields.hpp>

namespace m0::http::detail {

namespace {

bool value_safe(std::string_view s) noexcept {
    for (char c : s)
        if (c == '\r' || c == '\n' || c == '\0') return false;
    return true;
}

bool connection_specific(std::string_view name) noexcept {
    for (std::string_view f : {"Upgrade", "Proxy-Connection", "TE"})
        if (ascii_iequals(name, f)) return true;
    return false;
}

}  // namespace

std::optional<std::string_view> sendable_field(const response_header& field, bool http2) noexcept {
    const std::string_view name = field.name;
    if (name.empty() || !is_token(name) || is_engine_owned_header(name) || (http2 && connection_specific(name)) ||
        !value_safe(field.value))
        return std::nullopt;
    std::string_view value = field.value;
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    return value;
}

}  // namespace m0::http::detail
