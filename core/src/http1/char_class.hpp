#pragma once
// Byte classes of the HTTP/1.1 grammar (RFC 9110 5.1, 5.5, 5.6.2; RFC 9112
// 3.2; RFC 3986), as one 256-entry table of bit flags so that every scan of
// the request parser costs one load per byte.
#include <array>
#include <cstdint>
#include <string_view>

namespace m0::http::detail {

enum char_class : std::uint8_t {
    cc_tchar = 1 << 0,        // token character (method, field name, coding)
    cc_field_value = 1 << 1,  // VCHAR / obs-text / SP / HTAB
    cc_path = 1 << 2,         // request-target bytes up to the query, "%" excluded
    cc_query = 1 << 3,        // request-target bytes in the query, "%" excluded
    cc_reg_name = 1 << 4,     // unreserved / sub-delims (Host), "%" excluded
    cc_hex = 1 << 5,          // HEXDIG
    cc_qdtext = 1 << 6,       // quoted-string text (RFC 9110 5.6.4)
};

namespace char_class_detail {

constexpr std::string_view alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
constexpr std::string_view unreserved_extra = "-._~";
constexpr std::string_view sub_delims = "!$&'()*+,;=";

constexpr std::array<std::uint8_t, 256> make_table() {
    std::array<std::uint8_t, 256> t{};
    auto add = [&t](std::string_view chars, std::uint8_t flag) {
        for (char c : chars) t[static_cast<unsigned char>(c)] |= flag;
    };
    add(alnum, cc_tchar);
    add("!#$%&'*+-.^_`|~", cc_tchar);
    for (unsigned c = 0x21; c <= 0x7e; ++c) t[c] |= cc_field_value;
    for (unsigned c = 0x80; c <= 0xff; ++c) t[c] |= cc_field_value | cc_qdtext;
    t[' '] |= cc_field_value;
    t['\t'] |= cc_field_value;
    add(alnum, cc_reg_name);
    add(unreserved_extra, cc_reg_name);
    add(sub_delims, cc_reg_name);
    // Target bytes: RFC 3986 (unreserved, sub-delims, ":", "@", "/", "?"),
    // plus "[ ] { } | ^ `", which browsers send unescaped (WHATWG URL
    // percent-encode sets) and which no parser reads as a delimiter, so
    // refusing them would only refuse real traffic. Bytes >= 0x80 likewise:
    // some clients send UTF-8 unescaped, nginx and gunicorn pass it through,
    // and no parser reads such a byte as a delimiter. Never: SP, controls,
    // DEL, and '#', '"', '<', '>', backslash, which browsers always escape and
    // which some back ends treat as delimiters.
    for (unsigned c = 0x21; c <= 0x7e; ++c) t[c] |= cc_path | cc_query;
    for (unsigned c = 0x80; c <= 0xff; ++c) t[c] |= cc_path | cc_query;
    for (char c : std::string_view("#\"<>\\%?")) t[static_cast<unsigned char>(c)] &= ~(cc_path | cc_query);
    t['?'] |= cc_query;
    add("0123456789abcdefABCDEF", cc_hex);
    t['\t'] |= cc_qdtext;
    t[' '] |= cc_qdtext;
    t[0x21] |= cc_qdtext;
    for (unsigned c = 0x23; c <= 0x5b; ++c) t[c] |= cc_qdtext;
    for (unsigned c = 0x5d; c <= 0x7e; ++c) t[c] |= cc_qdtext;
    return t;
}

inline constexpr std::array<std::uint8_t, 256> table = make_table();

}  // namespace char_class_detail

constexpr bool is(char c, char_class cls) noexcept {
    return (char_class_detail::table[static_cast<unsigned char>(c)] & cls) != 0;
}

constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

constexpr int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Case-insensitive equality with a lower-case literal of letters, digits and
// '-'. `s` must hold no control bytes (it is a validated token or field
// value): then OR-ing 0x20 folds case without mapping any other byte onto
// one of those.
constexpr bool token_equals(std::string_view s, std::string_view lower) noexcept {
    if (s.size() != lower.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i)
        if ((s[i] | 0x20) != lower[i]) return false;
    return true;
}

}  // namespace m0::http::detail
