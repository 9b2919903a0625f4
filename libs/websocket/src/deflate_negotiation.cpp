#include <m0/websocket/deflate_negotiation.hpp>

#include <algorithm>
#include <charconv>

#include <m0/http_fields.hpp>

#include "trim.hpp"

namespace m0::websocket {
namespace {

using detail::trim;

// Splits at `sep` outside double quotes.
std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    bool quoted = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '"') quoted = !quoted;
        if (s[i] == sep && !quoted) {
            out.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    out.push_back(trim(s.substr(start)));
    return out;
}

// A window-bits value: 8..15, as a token or a quoted string (RFC 7692 7.1.2).
std::optional<int> window_bits(std::string_view value) {
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    int bits = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bits);
    if (ec != std::errc{} || end != value.data() + value.size() || value.size() > 2 || value.front() == '0')
        return std::nullopt;
    if (bits < 8 || bits > 15) return std::nullopt;
    return bits;
}

struct offer {
    bool server_no_context_takeover = false;
    bool client_no_context_takeover = false;
    std::optional<int> server_max_window_bits;
    bool client_max_window_bits = false;  // the client accepts a limit on its window
    std::optional<int> client_max_window_bits_value;
};

std::optional<offer> parse_offer(const std::vector<std::string_view>& params) {
    offer o;
    std::vector<std::string_view> seen;
    for (std::size_t i = 1; i < params.size(); ++i) {
        auto eq = params[i].find('=');
        auto name = trim(params[i].substr(0, eq));
        std::optional<std::string_view> value;
        if (eq != std::string_view::npos) value = trim(params[i].substr(eq + 1));
        if (std::find(seen.begin(), seen.end(), name) != seen.end()) return std::nullopt;
        seen.push_back(name);
        if (name == "server_no_context_takeover" && !value) {
            o.server_no_context_takeover = true;
        } else if (name == "client_no_context_takeover" && !value) {
            o.client_no_context_takeover = true;
        } else if (name == "server_max_window_bits" && value) {
            o.server_max_window_bits = window_bits(*value);
            if (!o.server_max_window_bits) return std::nullopt;
        } else if (name == "client_max_window_bits") {
            o.client_max_window_bits = true;
            if (value) {
                o.client_max_window_bits_value = window_bits(*value);
                if (!o.client_max_window_bits_value) return std::nullopt;
            }
        } else {
            return std::nullopt;
        }
    }
    return o;
}

deflate_params accept_offer(const offer& o, const deflate_options& options) {
    deflate_params p;
    p.level = options.level;
    p.response = "permessage-deflate";
    p.server_no_context_takeover = o.server_no_context_takeover || options.server_no_context_takeover;
    if (p.server_no_context_takeover) p.response += "; server_no_context_takeover";
    p.client_no_context_takeover = o.client_no_context_takeover || options.client_no_context_takeover;
    if (p.client_no_context_takeover) p.response += "; client_no_context_takeover";
    // A smaller window than the client's never needs saying: any inflater
    // reads it. Only a limit the client set is answered (with at most it).
    p.server_max_window_bits = std::min(o.server_max_window_bits.value_or(15), options.server_max_window_bits);
    if (o.server_max_window_bits) p.response += "; server_max_window_bits=" + std::to_string(p.server_max_window_bits);
    p.client_max_window_bits = 15;
    if (o.client_max_window_bits) {
        p.client_max_window_bits = std::min(o.client_max_window_bits_value.value_or(15), options.client_max_window_bits);
        if (p.client_max_window_bits < 15 || o.client_max_window_bits_value)
            p.response += "; client_max_window_bits=" + std::to_string(p.client_max_window_bits);
    }
    return p;
}

}  // namespace

std::optional<deflate_params> negotiate_deflate(const std::vector<std::string_view>& header_values,
                                                const deflate_options& options) {
    if (!options.enabled) return std::nullopt;
    for (auto value : header_values) {
        for (auto extension : split(value, ',')) {
            auto params = split(extension, ';');
            if (!http::ascii_iequals(params.front(), "permessage-deflate")) continue;
            if (auto o = parse_offer(params)) return accept_offer(*o, options);
        }
    }
    return std::nullopt;
}

}  // namespace m0::websocket
