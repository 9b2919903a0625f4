#define BOOST_TEST_MODULE proxy_protocol
// The PROXY protocol header parser: v1 text lines and v2 binary headers,
// byte by byte (every prefix of a valid header asks for more), and the
// malformed ones a strict receiver refuses.
#include <string>

#include <boost/test/unit_test.hpp>

#include "http/proxy_protocol.hpp"

using m0::http::parse_proxy_header;
using m0::http::proxy_header;
using m0::http::proxy_parse_status;

namespace {

constexpr std::size_t limit = 4096;

const std::string v2_signature("\r\n\r\n\0\r\nQUIT\n", 12);

// A v2 header: version/command byte, family/transport byte, then `rest`.
std::string v2(unsigned char ver_cmd, unsigned char fam, const std::string& rest) {
    std::string h = v2_signature;
    h += static_cast<char>(ver_cmd);
    h += static_cast<char>(fam);
    h += static_cast<char>(rest.size() >> 8);
    h += static_cast<char>(rest.size() & 0xff);
    return h + rest;
}

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int c : b) s += static_cast<char>(c);
    return s;
}

// 192.0.2.1:4711 → 198.51.100.2:443
const std::string inet_addresses = bytes({192, 0, 2, 1, 198, 51, 100, 2, 0x12, 0x67, 0x01, 0xbb});

proxy_parse_status parse(const std::string& data, proxy_header& h, std::string& why) {
    return parse_proxy_header(data, limit, h, why);
}

// Every proper prefix of a valid header needs more; the whole is done.
proxy_header parse_whole(const std::string& header) {
    proxy_header h;
    std::string why;
    for (std::size_t n = 0; n < header.size(); ++n)
        BOOST_TEST_REQUIRE((parse(header.substr(0, n), h, why) == proxy_parse_status::need_more),
                           "prefix of " << n << " bytes: " << why);
    BOOST_TEST_REQUIRE((parse(header + "GET / HTTP/1.1\r\n", h, why) == proxy_parse_status::done), why);
    BOOST_TEST(h.length == header.size());
    return h;
}

// 192.0.2.1:4711 → 198.51.100.2:443, the addresses every example carries.
void check_example_addresses(const proxy_header& h) {
    BOOST_TEST(h.has_addresses);
    BOOST_TEST(h.source.address().to_string() == "192.0.2.1");
    BOOST_TEST(h.source.port() == 4711);
    BOOST_TEST(h.destination.address().to_string() == "198.51.100.2");
    BOOST_TEST(h.destination.port() == 443);
}

std::string refused(const std::string& data) {
    proxy_header h;
    std::string why;
    const auto status = parse(data, h, why);
    BOOST_TEST((status == proxy_parse_status::error), "accepted: " << data.size() << " bytes");
    return why;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(proxy_protocol_v1)

BOOST_AUTO_TEST_CASE(tcp4_gives_both_addresses) {
    const auto h = parse_whole("PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\r\n");
    BOOST_TEST(h.version == 1u);
    check_example_addresses(h);
}

BOOST_AUTO_TEST_CASE(tcp6_gives_both_addresses) {
    const auto h = parse_whole("PROXY TCP6 2001:db8::1 2001:db8::2 65535 0\r\n");
    BOOST_TEST(h.source.address().to_string() == "2001:db8::1");
    BOOST_TEST(h.source.port() == 65535);
    BOOST_TEST(h.destination.port() == 0);
}

BOOST_AUTO_TEST_CASE(unknown_keeps_the_socket_addresses) {
    BOOST_TEST(!parse_whole("PROXY UNKNOWN\r\n").has_addresses);
    BOOST_TEST(!parse_whole("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n").has_addresses);
}

BOOST_AUTO_TEST_CASE(the_longest_line_is_107_bytes) {
    const std::string longest =
        "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    BOOST_TEST(longest.size() == 104u);
    parse_whole(longest);
    const std::string unknown = "PROXY UNKNOWN " + std::string(91, 'x') + "\r\n";
    BOOST_TEST(unknown.size() == 107u);
    parse_whole(unknown);
    BOOST_TEST(refused("PROXY UNKNOWN " + std::string(92, 'x') + "\r\n").find("107") != std::string::npos);
    // Over the limit without a CR at all: refused without waiting for more.
    BOOST_TEST(!refused("PROXY UNKNOWN " + std::string(200, 'x')).empty());
}

BOOST_AUTO_TEST_CASE(malformed_lines_are_refused) {
    for (const std::string bad : {
             "PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\n",        // bare LF
             "PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\rX",       // CR without LF
             "PROXY TCP4  192.0.2.1 198.51.100.2 4711 443\r\n",     // two spaces
             "PROXY TCP4 192.0.2.1 198.51.100.2 4711 443 \r\n",     // trailing space
             "PROXY TCP4 192.0.2.1 198.51.100.2 4711\r\n",          // a field missing
             "PROXY TCP4 192.0.2.1 198.51.100.2 4711 443 1\r\n",    // one too many
             "PROXY TCP5 192.0.2.1 198.51.100.2 4711 443\r\n",      // unknown protocol
             "PROXY tcp4 192.0.2.1 198.51.100.2 4711 443\r\n",      // case matters
             "PROXY TCP4 2001:db8::1 198.51.100.2 4711 443\r\n",    // v6 under TCP4
             "PROXY TCP6 192.0.2.1 2001:db8::2 4711 443\r\n",       // v4 under TCP6
             "PROXY TCP4 192.0.2 198.51.100.2 4711 443\r\n",        // short address
             "PROXY TCP4 192.0.2.1 198.51.100.2 65536 443\r\n",     // port too large
             "PROXY TCP4 192.0.2.1 198.51.100.2 04711 443\r\n",     // leading zero
             "PROXY TCP4 192.0.2.1 198.51.100.2 -1 443\r\n",        // sign
             "PROXY TCP4 192.0.2.1 198.51.100.2 +1 443\r\n",
             "PROXY\r\n",
             "PROXY \r\n",
             "PROXYTCP4 192.0.2.1 198.51.100.2 4711 443\r\n",
             "GET / HTTP/1.1\r\n",                                    // no header at all
             "PRI * HTTP/2.0\r\n",
         })
        BOOST_TEST(!refused(bad).empty(), bad);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(proxy_protocol_v2)

BOOST_AUTO_TEST_CASE(proxy_over_tcp4) {
    const auto h = parse_whole(v2(0x21, 0x11, inet_addresses));
    BOOST_TEST(h.version == 2u);
    check_example_addresses(h);
    BOOST_TEST(!h.ssl);
}

BOOST_AUTO_TEST_CASE(proxy_over_tcp6) {
    std::string a(16, '\0'), b(16, '\0');
    a[0] = 0x20, a[1] = 0x01, a[2] = 0x0d, a[3] = static_cast<char>(0xb8), a[15] = 1;
    b[15] = 1;
    const auto h = parse_whole(v2(0x21, 0x21, a + b + bytes({0, 80, 0x1f, 0x90})));
    BOOST_TEST(h.source.address().to_string() == "2001:db8::1");
    BOOST_TEST(h.source.port() == 80);
    BOOST_TEST(h.destination.address().to_string() == "::1");
    BOOST_TEST(h.destination.port() == 8080);
}

BOOST_AUTO_TEST_CASE(local_and_unspec_keep_the_socket_addresses) {
    BOOST_TEST(!parse_whole(v2(0x20, 0x00, "")).has_addresses);
    // LOCAL may still carry addresses: they are the proxy's, not a client's.
    BOOST_TEST(!parse_whole(v2(0x20, 0x11, inet_addresses)).has_addresses);
    BOOST_TEST(!parse_whole(v2(0x21, 0x00, "")).has_addresses);
    BOOST_TEST(!parse_whole(v2(0x21, 0x31, std::string(216, '\0'))).has_addresses);
}

BOOST_AUTO_TEST_CASE(tlvs_are_skipped_and_ssl_is_seen) {
    // PP2_TYPE_ALPN "h2", PP2_TYPE_NOOP of 0 bytes, then PP2_TYPE_SSL with the client-SSL flag.
    const std::string alpn = bytes({0x01, 0, 2}) + "h2";
    const std::string noop = bytes({0x04, 0, 0});
    const std::string ssl = bytes({0x20, 0, 5, 0x01, 0, 0, 0, 0});
    auto h = parse_whole(v2(0x21, 0x11, inet_addresses + alpn + noop));
    BOOST_TEST(!h.ssl);
    h = parse_whole(v2(0x21, 0x11, inet_addresses + alpn + ssl));
    BOOST_TEST(h.ssl);
    BOOST_TEST(h.source.port() == 4711);
    // An SSL TLV whose client did not use TLS.
    BOOST_TEST(!parse_whole(v2(0x21, 0x11, inet_addresses + bytes({0x20, 0, 5, 0, 0, 0, 0, 0}))).ssl);
}

BOOST_AUTO_TEST_CASE(malformed_headers_are_refused) {
    BOOST_TEST(refused(v2(0x11, 0x11, inet_addresses)).find("version") != std::string::npos);
    BOOST_TEST(refused(v2(0x31, 0x11, inet_addresses)).find("version") != std::string::npos);
    BOOST_TEST(refused(v2(0x22, 0x11, inet_addresses)).find("command") != std::string::npos);
    BOOST_TEST(refused(v2(0x21, 0x41, inet_addresses)).find("family") != std::string::npos);
    BOOST_TEST(refused(v2(0x21, 0x12, inet_addresses)).find("transport") != std::string::npos);  // UDP
    BOOST_TEST(refused(v2(0x21, 0x10, inet_addresses)).find("transport") != std::string::npos);
    BOOST_TEST(refused(v2(0x21, 0x11, inet_addresses.substr(0, 11))).find("addresses") != std::string::npos);
    BOOST_TEST(refused(v2(0x21, 0x21, inet_addresses)).find("addresses") != std::string::npos);
    BOOST_TEST(refused(v2(0x21, 0x11, inet_addresses + bytes({0x01, 0}))).find("TLV") != std::string::npos);
    BOOST_TEST(refused(v2(0x21, 0x11, inet_addresses + bytes({0x01, 0, 5, 'h'}))).find("TLV") != std::string::npos);
    BOOST_TEST(refused(v2(0x21, 0x11, inet_addresses + bytes({0x20, 0, 1, 1}))).find("SSL") != std::string::npos);
    // A broken signature, at its first and last byte.
    std::string bad = v2(0x21, 0x11, inet_addresses);
    bad[0] = 'X';
    BOOST_TEST(!refused(bad).empty());
    bad = v2(0x21, 0x11, inet_addresses);
    bad[11] = 'X';
    BOOST_TEST(!refused(bad).empty());
    // A header longer than the read buffer could hold, refused before it arrives.
    std::string big = v2(0x21, 0x11, inet_addresses + bytes({0x04, 0x20, 0}) + std::string(0x2000, '\0'));
    BOOST_TEST(refused(big.substr(0, 16)).find("limit") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
