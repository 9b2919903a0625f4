#include "http/forwarded.hpp"

#include <charconv>
#include <optional>

#include <m0/http_fields.hpp>

namespace m0::http {

namespace {

namespace ip = boost::asio::ip;

// One hop as a header describes it.
struct hop {
    bool has_address = false;  // false: unknown, obfuscated, or not given
    ip::tcp::endpoint endpoint;
    std::string_view scheme;  // "" when the hop says nothing about it
};

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

bool is_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

std::optional<unsigned short> parse_port(std::string_view s) {
    unsigned value = 0;
    if (!is_digits(s) || s.size() > 5) return std::nullopt;
    std::from_chars(s.data(), s.data() + s.size(), value);
    if (value > 65535) return std::nullopt;
    return static_cast<unsigned short>(value);
}

// "http", "https", "ws", "wss" in any case → "http" or "https".
std::optional<std::string_view> parse_scheme(std::string_view s) {
    if (ascii_iequals(s, "http") || ascii_iequals(s, "ws")) return std::string_view("http");
    if (ascii_iequals(s, "https") || ascii_iequals(s, "wss")) return std::string_view("https");
    return std::nullopt;
}

std::optional<ip::address> parse_ip(std::string_view s, bool v6) {
    boost::system::error_code ec;
    const auto a = ip::make_address(std::string(s), ec);
    if (ec || a.is_v6() != v6) return std::nullopt;
    return a;
}

// An address with an optional port: "192.0.2.1", "192.0.2.1:4711",
// "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:4711". With
// `obfuscated_port`, a port may be an obfuscated "_name" (RFC 7239 6.3).
std::optional<ip::tcp::endpoint> parse_address(std::string_view s, bool obfuscated_port) {
    auto port_of = [&](std::string_view p) -> std::optional<unsigned short> {
        if (obfuscated_port && p.size() > 1 && p.front() == '_') return 0;
        return parse_port(p);
    };
    if (!s.empty() && s.front() == '[') {
        const auto close = s.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        const auto a = parse_ip(s.substr(1, close - 1), true);
        if (!a) return std::nullopt;
        const auto rest = s.substr(close + 1);
        if (rest.empty()) return ip::tcp::endpoint(*a, 0);
        if (rest.front() != ':') return std::nullopt;
        const auto port = port_of(rest.substr(1));
        if (!port) return std::nullopt;
        return ip::tcp::endpoint(*a, *port);
    }
    const auto colon = s.find(':');
    if (colon != std::string_view::npos && s.find(':', colon + 1) != std::string_view::npos) {
        const auto a = parse_ip(s, true);  // a bare IPv6 address
        if (!a) return std::nullopt;
        return ip::tcp::endpoint(*a, 0);
    }
    const auto a = parse_ip(s.substr(0, colon), false);
    if (!a) return std::nullopt;
    if (colon == std::string_view::npos) return ip::tcp::endpoint(*a, 0);
    const auto port = port_of(s.substr(colon + 1));
    if (!port) return std::nullopt;
    return ip::tcp::endpoint(*a, *port);
}

bool is_obfuscated(std::string_view s) {
    if (s.size() < 2 || s.front() != '_') return false;
    for (char c : s.substr(1)) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

// A `for=` node (RFC 7239 6): an address with an optional port, "unknown",
// or an obfuscated identifier.
bool parse_node(std::string_view value, hop& h) {
    if (ascii_iequals(value, "unknown") || is_obfuscated(value)) return true;
    // An IPv6 node must be in brackets here: its colons would be ambiguous.
    if (value.find(':') != std::string_view::npos && value.front() != '[' &&
        value.find(':') != value.rfind(':'))
        return false;
    const auto ep = parse_address(value, true);
    if (!ep) return false;
    h.has_address = true;
    h.endpoint = *ep;
    return true;
}

class forwarded_parser {
public:
    forwarded_parser(std::string_view text, std::vector<hop>& out, std::string& why)
        : s_(text), out_(out), why_(why) {}

    bool run() {
        while (true) {
            skip_ows();
            if (at_end()) return true;
            if (peek() == ',') {  // an empty list element (RFC 9110 5.6.1)
                ++pos_;
                continue;
            }
            if (!element()) return false;
            skip_ows();
            if (at_end()) return true;
            if (peek() != ',') return fail("expected ',' or ';' after a parameter");
            ++pos_;
        }
    }

private:
    bool element() {
        hop h;
        bool seen_for = false, seen_proto = false, seen_by = false, seen_host = false;
        while (true) {
            const auto name = token();
            if (name.empty()) return fail("expected a parameter name");
            if (at_end() || peek() != '=') return fail("expected '=' after '" + std::string(name) + "'");
            ++pos_;
            std::string value;
            if (!parameter_value(value)) return false;
            bool* seen = ascii_iequals(name, "for")     ? &seen_for
                         : ascii_iequals(name, "proto") ? &seen_proto
                         : ascii_iequals(name, "by")    ? &seen_by
                         : ascii_iequals(name, "host")  ? &seen_host
                                                        : nullptr;
            if (seen) {
                if (*seen) return fail("parameter '" + std::string(name) + "' twice in one element");
                *seen = true;
            }
            if (seen == &seen_for && !parse_node(value, h)) return fail("'for=" + value + "' is not a node");
            if (seen == &seen_proto) {
                const auto scheme = parse_scheme(value);
                if (!scheme) return fail("'proto=" + value + "' is not http or https");
                h.scheme = *scheme;
            }
            skip_ows();
            if (at_end() || peek() != ';') break;
            ++pos_;
            skip_ows();
        }
        out_.push_back(h);
        return true;
    }

    bool parameter_value(std::string& value) {
        if (!at_end() && peek() == '"') {
            ++pos_;
            while (!at_end() && peek() != '"') {
                char c = s_[pos_++];
                if (c == '\\') {
                    if (at_end()) break;
                    c = s_[pos_++];
                }
                if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
                    return fail("a control character in a quoted value");
                value += c;
            }
            if (at_end()) return fail("an unterminated quoted value");
            ++pos_;
            return true;
        }
        const auto t = token();
        if (t.empty()) return fail("expected a value");
        value.assign(t);
        return true;
    }

    std::string_view token() {
        const std::size_t start = pos_;
        while (!at_end() && is_token(s_.substr(pos_, 1))) ++pos_;
        return s_.substr(start, pos_ - start);
    }

    void skip_ows() {
        while (!at_end() && is_ows(peek())) ++pos_;
    }
    bool at_end() const { return pos_ >= s_.size(); }
    char peek() const { return s_[pos_]; }
    bool fail(std::string what) {
        why_ = "Forwarded: " + std::move(what);
        return false;
    }

    std::string_view s_;
    std::size_t pos_ = 0;
    std::vector<hop>& out_;
    std::string& why_;
};

// Splits a comma-separated list into trimmed items; false on an empty item.
bool split_list(std::string_view value, std::vector<std::string_view>& out) {
    while (true) {
        const auto comma = value.find(',');
        const auto item = trim(value.substr(0, comma));
        if (item.empty()) return false;
        out.push_back(item);
        if (comma == std::string_view::npos) return true;
        value.remove_prefix(comma + 1);
    }
}

// Index of the client among `hops`: the rightmost hop that is not a trusted
// address, or the leftmost when all are.
std::size_t client_index(const std::vector<hop>& hops, const trusted_networks& trusted) {
    std::size_t i = hops.size() - 1;
    while (i > 0 && hops[i].has_address && trusted.contains(hops[i].endpoint.address())) --i;
    return i;
}

void apply(const hop& h, forwarded_client& client) {
    if (h.has_address) client.remote = h.endpoint;
    if (!h.scheme.empty()) client.scheme = h.scheme;
}

forwarded_outcome from_forwarded(const std::vector<std::string_view>& lines, const trusted_networks& trusted,
                                 forwarded_client& client, std::string& why) {
    std::vector<hop> hops;
    for (auto line : lines)
        if (!forwarded_parser(line, hops, why).run()) return forwarded_outcome::malformed;
    if (hops.empty()) {
        why = "Forwarded: no element";
        return forwarded_outcome::malformed;
    }
    apply(hops[client_index(hops, trusted)], client);
    return forwarded_outcome::applied;
}

forwarded_outcome from_x_forwarded(const std::vector<std::string_view>& for_lines,
                                   const std::vector<std::string_view>& proto_lines, const trusted_networks& trusted,
                                   forwarded_client& client, std::string& why) {
    std::vector<std::string_view> fors, protos;
    for (auto line : for_lines)
        if (!split_list(line, fors)) {
            why = "X-Forwarded-For: an empty entry";
            return forwarded_outcome::malformed;
        }
    for (auto line : proto_lines)
        if (!split_list(line, protos)) {
            why = "X-Forwarded-Proto: an empty entry";
            return forwarded_outcome::malformed;
        }
    std::vector<hop> hops;
    for (auto f : fors) {
        const auto ep = parse_address(f, false);
        if (!ep) {
            why = "X-Forwarded-For: '" + std::string(f) + "' is not an IP address";
            return forwarded_outcome::malformed;
        }
        hop h;
        h.has_address = true;
        h.endpoint = *ep;
        hops.push_back(h);
    }
    std::vector<std::string_view> schemes;
    for (auto p : protos) {
        const auto scheme = parse_scheme(p);
        if (!scheme) {
            why = "X-Forwarded-Proto: '" + std::string(p) + "' is not http or https";
            return forwarded_outcome::malformed;
        }
        schemes.push_back(*scheme);
    }
    // One proto per hop, or one for all; anything else does not say which
    // hop's protocol is the client's.
    if (!schemes.empty() && schemes.size() != 1 && schemes.size() != hops.size()) {
        why = "X-Forwarded-Proto: " + std::to_string(schemes.size()) + " entries for " + std::to_string(hops.size()) +
              " in X-Forwarded-For";
        return forwarded_outcome::malformed;
    }
    if (hops.empty()) {
        client.scheme = schemes.front();
        return forwarded_outcome::applied;
    }
    const std::size_t i = client_index(hops, trusted);
    if (!schemes.empty()) hops[i].scheme = schemes.size() == 1 ? schemes.front() : schemes[i];
    apply(hops[i], client);
    return forwarded_outcome::applied;
}

}  // namespace

forwarded_outcome resolve_forwarded(const std::vector<header_field>& headers, const trusted_networks& trusted,
                                    forwarded_client& client, std::string& why) {
    std::vector<std::string_view> forwarded, x_for, x_proto;
    for (const auto& h : headers) {
        // Cheap first test: every name of interest starts with f or x.
        const char c = h.name.empty() ? '\0' : static_cast<char>(h.name.front() | 0x20);
        if (c != 'f' && c != 'x') continue;
        if (ascii_iequals(h.name, "forwarded"))
            forwarded.push_back(h.value);
        else if (ascii_iequals(h.name, "x-forwarded-for"))
            x_for.push_back(h.value);
        else if (ascii_iequals(h.name, "x-forwarded-proto"))
            x_proto.push_back(h.value);
    }
    if (!forwarded.empty()) return from_forwarded(forwarded, trusted, client, why);
    if (!x_for.empty() || !x_proto.empty()) return from_x_forwarded(x_for, x_proto, trusted, client, why);
    return forwarded_outcome::none;
}

}  // namespace m0::http
