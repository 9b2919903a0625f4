#define BOOST_TEST_MODULE forwarded
// Who the client is behind trusted proxies: Forwarded (RFC 7239) and
// X-Forwarded-For / X-Forwarded-Proto, several hops, and the malformed
// headers that leave the peer as it was.
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "http/forwarded.hpp"

using m0::http::forwarded_client;
using m0::http::forwarded_outcome;
using m0::http::header_field;
using m0::http::ip_network;
using m0::http::resolve_forwarded;
using m0::http::trusted_networks;

namespace {

trusted_networks trust(std::vector<const char*> nets) {
    std::vector<ip_network> out;
    for (const char* n : nets) {
        std::string why;
        out.push_back(*ip_network::parse(n, why));
    }
    return trusted_networks(std::move(out));
}

const trusted_networks loopback = trust({"127.0.0.0/8", "::1"});

struct result {
    forwarded_outcome outcome;
    std::string address;  // "" when unchanged
    unsigned short port;
    std::string scheme;
    std::string why;
};

// Resolves `headers` (name, value pairs) as sent by the peer 127.0.0.1:5000.
result resolve(std::vector<std::pair<std::string, std::string>> headers,
               const trusted_networks& trusted = loopback) {
    std::vector<header_field> fields;
    for (const auto& [n, v] : headers) fields.push_back({n, v});
    const boost::asio::ip::tcp::endpoint peer(boost::asio::ip::make_address("127.0.0.1"), 5000);
    forwarded_client client{peer, "http"};
    result r;
    r.outcome = resolve_forwarded(fields, trusted, client, r.why);
    r.address = client.remote == peer ? "" : client.remote.address().to_string();
    r.port = client.remote.port();
    r.scheme = std::string(client.scheme);
    return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(x_forwarded)

BOOST_AUTO_TEST_CASE(one_hop_names_the_client_and_its_scheme) {
    const auto r = resolve({{"X-Forwarded-For", "203.0.113.9"}, {"X-Forwarded-Proto", "https"}});
    BOOST_TEST((r.outcome == forwarded_outcome::applied));
    BOOST_TEST(r.address == "203.0.113.9");
    BOOST_TEST(r.port == 0);  // not said
    BOOST_TEST(r.scheme == "https");
}

BOOST_AUTO_TEST_CASE(no_header_changes_nothing) {
    const auto r = resolve({{"Host", "a"}, {"X-Real-IP", "203.0.113.9"}});
    BOOST_TEST((r.outcome == forwarded_outcome::none));
    BOOST_TEST(r.address == "");
    BOOST_TEST(r.scheme == "http");
}

BOOST_AUTO_TEST_CASE(the_rightmost_untrusted_hop_is_the_client) {
    // The client wrote "1.1.1.1" itself; the trusted proxies appended the rest.
    auto r = resolve({{"x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.2, 127.0.0.1"}},
                     trust({"127.0.0.0/8", "10.0.0.0/8"}));
    BOOST_TEST(r.address == "203.0.113.9");
    // All trusted: the leftmost.
    r = resolve({{"X-Forwarded-For", "10.0.0.7, 127.0.0.1"}}, trust({"127.0.0.0/8", "10.0.0.0/8"}));
    BOOST_TEST(r.address == "10.0.0.7");
    // Header lines join as one list.
    r = resolve({{"X-Forwarded-For", "1.1.1.1"}, {"X-Forwarded-For", "203.0.113.9"}});
    BOOST_TEST(r.address == "203.0.113.9");
}

BOOST_AUTO_TEST_CASE(ipv6_and_ports) {
    BOOST_TEST(resolve({{"X-Forwarded-For", "2001:db8::7"}}).address == "2001:db8::7");
    auto r = resolve({{"X-Forwarded-For", "[2001:db8::7]:4711"}});
    BOOST_TEST(r.address == "2001:db8::7");
    BOOST_TEST(r.port == 4711);
    r = resolve({{"X-Forwarded-For", "203.0.113.9:4711"}});
    BOOST_TEST(r.port == 4711);
}

BOOST_AUTO_TEST_CASE(proto_per_hop_or_one_for_all) {
    auto r = resolve({{"X-Forwarded-For", "203.0.113.9, 127.0.0.1"}, {"X-Forwarded-Proto", "https, http"}});
    BOOST_TEST(r.scheme == "https");  // the client's hop
    r = resolve({{"X-Forwarded-Proto", "HTTPS"}});
    BOOST_TEST((r.outcome == forwarded_outcome::applied));
    BOOST_TEST(r.scheme == "https");
    BOOST_TEST(r.address == "");
    BOOST_TEST(resolve({{"X-Forwarded-Proto", "wss"}}).scheme == "https");
    BOOST_TEST(resolve({{"X-Forwarded-Proto", "ws"}}).scheme == "http");
}

BOOST_AUTO_TEST_CASE(malformed_headers_change_nothing) {
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"X-Forwarded-For", "203.0.113.9, evil"},
             {"X-Forwarded-For", "203.0.113.9,,10.0.0.1"},
             {"X-Forwarded-For", ""},
             {"X-Forwarded-For", "203.0.113.9:99999"},
             {"X-Forwarded-For", "unknown"},
             {"X-Forwarded-Proto", "ftp"},
             {"X-Forwarded-Proto", "https, http"},  // two protos, no hops to pair them with
         }) {
        const auto r = resolve({{name, value}, {"X-Forwarded-Proto", "https"}});
        BOOST_TEST((r.outcome == forwarded_outcome::malformed), name << ": " << value);
        BOOST_TEST(r.address == "");
        BOOST_TEST(r.scheme == "http");
        BOOST_TEST(!r.why.empty());
    }
    const auto r = resolve({{"X-Forwarded-For", "1.1.1.1, 2.2.2.2, 3.3.3.3"}, {"X-Forwarded-Proto", "https, http"}});
    BOOST_TEST((r.outcome == forwarded_outcome::malformed));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(forwarded_rfc7239)

BOOST_AUTO_TEST_CASE(for_and_proto) {
    auto r = resolve({{"Forwarded", "for=203.0.113.9;proto=https;by=127.0.0.1"}});
    BOOST_TEST((r.outcome == forwarded_outcome::applied));
    BOOST_TEST(r.address == "203.0.113.9");
    BOOST_TEST(r.scheme == "https");
    r = resolve({{"Forwarded", "For=\"[2001:db8:cafe::17]:4711\"; Proto=HTTP"}});
    BOOST_TEST(r.address == "2001:db8:cafe::17");
    BOOST_TEST(r.port == 4711);
    BOOST_TEST(r.scheme == "http");
    r = resolve({{"Forwarded", "for=\"203.0.113.9:_port\""}});
    BOOST_TEST(r.address == "203.0.113.9");
    BOOST_TEST(r.port == 0);
}

BOOST_AUTO_TEST_CASE(wins_over_x_forwarded) {
    const auto r = resolve({{"X-Forwarded-For", "198.51.100.1"}, {"X-Forwarded-Proto", "http"},
                            {"Forwarded", "for=203.0.113.9;proto=https"}});
    BOOST_TEST(r.address == "203.0.113.9");
    BOOST_TEST(r.scheme == "https");
}

BOOST_AUTO_TEST_CASE(hops_walk_from_the_right) {
    auto r = resolve({{"Forwarded", "for=1.1.1.1, for=203.0.113.9;proto=https, for=127.0.0.1;proto=http"}});
    BOOST_TEST(r.address == "203.0.113.9");
    BOOST_TEST(r.scheme == "https");
    r = resolve({{"Forwarded", "for=1.1.1.1"}, {"Forwarded", "for=203.0.113.9"}});
    BOOST_TEST(r.address == "203.0.113.9");
    // Empty list elements are allowed (RFC 9110 5.6.1).
    BOOST_TEST(resolve({{"Forwarded", ", for=203.0.113.9 ,"}}).address == "203.0.113.9");
}

BOOST_AUTO_TEST_CASE(unknown_nodes_keep_the_peer_address_but_give_the_scheme) {
    for (const char* v : {"for=unknown;proto=https", "for=_hidden;proto=https", "proto=https"}) {
        const auto r = resolve({{"Forwarded", v}});
        BOOST_TEST((r.outcome == forwarded_outcome::applied), v);
        BOOST_TEST(r.address == "", v);
        BOOST_TEST(r.scheme == "https", v);
    }
    // An obfuscated hop stops the walk: what lies left of it is not the proxies' word.
    BOOST_TEST(resolve({{"Forwarded", "for=203.0.113.9, for=_proxy"}}).address == "");
}

BOOST_AUTO_TEST_CASE(malformed_forwarded_changes_nothing_not_even_x_forwarded) {
    for (const char* v : {
             "for=203.0.113.9;for=198.51.100.1",  // a parameter twice
             "for=2001:db8::1",                  // IPv6 must be quoted and bracketed
             "for=\"2001:db8::1\"",              // and bracketed
             "for=\"[2001:db8::1\"",
             "for=203.0.113.9;proto=ftp",
             "for=203.0.113.9 for=1.2.3.4",
             "for=",
             "=1.2.3.4",
             "for=\"203.0.113.9",
             "for=203.0.113.9;",
             "for=999.0.113.9",
             "for=203.0.113.9:99999",
             "",
         }) {
        const auto r = resolve({{"Forwarded", v}, {"X-Forwarded-For", "198.51.100.1"}});
        BOOST_TEST((r.outcome == forwarded_outcome::malformed), v);
        BOOST_TEST(r.address == "", v);
        BOOST_TEST(r.why.find("Forwarded") != std::string::npos, v);
    }
}

BOOST_AUTO_TEST_SUITE_END()
