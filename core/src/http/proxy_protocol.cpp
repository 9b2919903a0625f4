#include "http/proxy_protocol.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>

namespace m0::http {

namespace {

namespace ip = boost::asio::ip;

constexpr std::string_view v1_prefix = "PROXY ";
constexpr std::array<unsigned char, 12> v2_signature = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                        0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

// v2 byte 13: version (high nibble) and command (low nibble).
constexpr unsigned v2_command_local = 0x0;
constexpr unsigned v2_command_proxy = 0x1;
// v2 byte 14: address family (high nibble) and transport (low nibble).
constexpr unsigned v2_family_unspec = 0x0;
constexpr unsigned v2_family_inet = 0x1;
constexpr unsigned v2_family_inet6 = 0x2;
constexpr unsigned v2_family_unix = 0x3;
constexpr unsigned v2_transport_stream = 0x1;
constexpr std::size_t v2_inet_length = 12;    // 2 × 4 address bytes, 2 × 2 port bytes
constexpr std::size_t v2_inet6_length = 36;   // 2 × 16, 2 × 2
constexpr std::size_t v2_unix_length = 216;   // 2 × 108
constexpr unsigned char v2_tlv_ssl = 0x20;
constexpr unsigned char v2_ssl_client_ssl = 0x01;

proxy_parse_status fail(std::string& why, std::string what) {
    why = std::move(what);
    return proxy_parse_status::error;
}

// A port: decimal 0..65535 without a leading zero (the spec forbids one).
std::optional<unsigned short> v1_port(std::string_view s) {
    if (s.empty() || s.size() > 5 || (s.size() > 1 && s.front() == '0')) return std::nullopt;
    unsigned v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v > 65535) return std::nullopt;
    return static_cast<unsigned short>(v);
}

std::optional<ip::address> v1_address(std::string_view s, bool v6) {
    boost::system::error_code ec;
    if (v6) {
        const auto a = ip::make_address_v6(std::string(s), ec);
        if (ec || s.find('%') != std::string_view::npos) return std::nullopt;  // no scope ids
        return ip::address(a);
    }
    const auto a = ip::make_address_v4(std::string(s), ec);
    if (ec) return std::nullopt;
    return ip::address(a);
}

proxy_parse_status parse_v1(std::string_view data, proxy_header& out, std::string& why) {
    const auto cr = data.find('\r');
    if (cr == std::string_view::npos) {
        if (data.size() >= proxy_v1_max_length) return fail(why, "PROXY v1 line longer than 107 bytes");
        if (data.find('\n') != std::string_view::npos) return fail(why, "PROXY v1 line ends in a bare LF");
        return proxy_parse_status::need_more;
    }
    if (cr + 2 > proxy_v1_max_length) return fail(why, "PROXY v1 line longer than 107 bytes");
    if (cr + 1 >= data.size()) return proxy_parse_status::need_more;
    if (data[cr + 1] != '\n') return fail(why, "PROXY v1 line: CR not followed by LF");
    const std::string_view line = data.substr(v1_prefix.size(), cr - v1_prefix.size());
    if (line.find('\n') != std::string_view::npos) return fail(why, "PROXY v1 line holds a bare LF");

    std::array<std::string_view, 5> words{};
    std::size_t n = 0;
    std::size_t pos = 0;
    while (true) {
        const auto sp = line.find(' ', pos);
        const auto word = line.substr(pos, sp == std::string_view::npos ? std::string_view::npos : sp - pos);
        if (n == 0 && word == "UNKNOWN") {
            // The rest is the sender's business and is ignored (the spec).
            out = {};
            out.version = 1;
            out.length = cr + 2;
            return proxy_parse_status::done;
        }
        if (word.empty()) return fail(why, "PROXY v1 line: expected single spaces between fields");
        if (n == words.size()) return fail(why, "PROXY v1 line: more than 5 fields after PROXY");
        words[n++] = word;
        if (sp == std::string_view::npos) break;
        pos = sp + 1;
    }
    if (words[0] != "TCP4" && words[0] != "TCP6")
        return fail(why, "PROXY v1 line: protocol '" + std::string(words[0]) + "' is not TCP4, TCP6 or UNKNOWN");
    if (n != 5) return fail(why, "PROXY v1 line: expected 'PROXY " + std::string(words[0]) + " SRC DST SPORT DPORT'");
    const bool v6 = words[0] == "TCP6";
    const auto src = v1_address(words[1], v6);
    const auto dst = v1_address(words[2], v6);
    if (!src || !dst)
        return fail(why, "PROXY v1 line: '" + std::string(src ? words[2] : words[1]) + "' is not an " +
                             (v6 ? "IPv6" : "IPv4") + " address");
    const auto sport = v1_port(words[3]);
    const auto dport = v1_port(words[4]);
    if (!sport || !dport)
        return fail(why, "PROXY v1 line: '" + std::string(sport ? words[4] : words[3]) + "' is not a port");
    out = {};
    out.version = 1;
    out.has_addresses = true;
    out.source = {*src, *sport};
    out.destination = {*dst, *dport};
    out.length = cr + 2;
    return proxy_parse_status::done;
}

std::uint16_t be16(const unsigned char* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }

// Walks the TLVs after the addresses: each must fit exactly.
proxy_parse_status parse_v2_tlvs(const unsigned char* p, std::size_t n, proxy_header& out, std::string& why) {
    while (n > 0) {
        if (n < 3) return fail(why, "PROXY v2 header: a truncated TLV");
        const unsigned char type = p[0];
        const std::size_t len = be16(p + 1);
        if (len > n - 3) return fail(why, "PROXY v2 header: a TLV longer than the header");
        // PP2_TYPE_SSL: client flags (1 byte), verify (4 bytes), sub-TLVs.
        if (type == v2_tlv_ssl) {
            if (len < 5) return fail(why, "PROXY v2 header: a truncated SSL TLV");
            out.ssl = (p[3] & v2_ssl_client_ssl) != 0;
        }
        p += 3 + len;
        n -= 3 + len;
    }
    return proxy_parse_status::done;
}

// Source address, destination address, source port, destination port, in
// network byte order.
template <class Address>
void v2_addresses(const unsigned char* a, proxy_header& out) {
    typename Address::bytes_type source, destination;
    const std::size_t n = source.size();
    std::copy(a, a + n, source.begin());
    std::copy(a + n, a + 2 * n, destination.begin());
    out.source = {Address(source), be16(a + 2 * n)};
    out.destination = {Address(destination), be16(a + 2 * n + 2)};
    out.has_addresses = true;
}

proxy_parse_status parse_v2(std::string_view data, std::size_t max_length, proxy_header& out, std::string& why) {
    if (data.size() < proxy_v2_fixed_length) return proxy_parse_status::need_more;
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const unsigned version = p[12] >> 4, command = p[12] & 0x0f;
    const unsigned family = p[13] >> 4, transport = p[13] & 0x0f;
    const std::size_t rest = be16(p + 14);
    if (version != 2) return fail(why, "PROXY v2 header: version " + std::to_string(version) + ", expected 2");
    if (command != v2_command_local && command != v2_command_proxy)
        return fail(why, "PROXY v2 header: command " + std::to_string(command) + " is neither LOCAL nor PROXY");
    if (proxy_v2_fixed_length + rest > max_length)
        return fail(why, "PROXY v2 header of " + std::to_string(proxy_v2_fixed_length + rest) +
                             " bytes, over the limit of " + std::to_string(max_length));
    if (data.size() < proxy_v2_fixed_length + rest) return proxy_parse_status::need_more;

    out = {};
    out.version = 2;
    out.length = proxy_v2_fixed_length + rest;
    std::size_t addresses = 0;
    switch (family) {
        case v2_family_unspec: break;
        case v2_family_inet: addresses = v2_inet_length; break;
        case v2_family_inet6: addresses = v2_inet6_length; break;
        case v2_family_unix: addresses = v2_unix_length; break;
        default: return fail(why, "PROXY v2 header: unknown address family " + std::to_string(family));
    }
    if (command == v2_command_proxy && family != v2_family_unspec && transport != v2_transport_stream)
        return fail(why, "PROXY v2 header: transport " + std::to_string(transport) + " is not a stream (TCP)");
    if (rest < addresses)
        return fail(why, "PROXY v2 header: " + std::to_string(rest) + " bytes cannot hold the addresses of family " +
                             std::to_string(family));
    const unsigned char* a = p + proxy_v2_fixed_length;
    if (const auto r = parse_v2_tlvs(a + addresses, rest - addresses, out, why); r != proxy_parse_status::done)
        return r;
    // LOCAL: the proxy's own connection (a health check); its addresses
    // are not a client's.
    if (command == v2_command_local) return proxy_parse_status::done;
    if (family == v2_family_inet) v2_addresses<ip::address_v4>(a, out);
    if (family == v2_family_inet6) v2_addresses<ip::address_v6>(a, out);
    return proxy_parse_status::done;
}

}  // namespace

proxy_parse_status parse_proxy_header(std::string_view data, std::size_t max_length, proxy_header& out,
                                      std::string& why) {
    if (data.empty()) return proxy_parse_status::need_more;
    if (data.front() == 'P') {
        const auto n = std::min(data.size(), v1_prefix.size());
        if (data.substr(0, n) != v1_prefix.substr(0, n))
            return fail(why, "not a PROXY protocol header (it must start with 'PROXY ' or the v2 signature)");
        if (data.size() < v1_prefix.size()) return proxy_parse_status::need_more;
        return parse_v1(data, out, why);
    }
    const auto n = std::min(data.size(), v2_signature.size());
    if (!std::equal(v2_signature.begin(), v2_signature.begin() + n, reinterpret_cast<const unsigned char*>(data.data())))
        return fail(why, "not a PROXY protocol header (it must start with 'PROXY ' or the v2 signature)");
    return parse_v2(data, max_length, out, why);
}

}  // namespace m0::http
