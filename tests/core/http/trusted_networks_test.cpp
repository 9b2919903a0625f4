#define BOOST_TEST_MODULE trusted_networks
// server.forwarded_allow_ips: addresses and CIDR blocks, parsed strictly,
// and which peers they contain.
#include <boost/asio/ip/address.hpp>
#include <boost/test/unit_test.hpp>

#include "http/trusted_networks.hpp"

using m0::http::ip_network;
using m0::http::trusted_networks;

namespace {

boost::asio::ip::address addr(const char* s) { return boost::asio::ip::make_address(s); }

ip_network net(const char* s) {
    std::string why;
    auto n = ip_network::parse(s, why);
    BOOST_TEST_REQUIRE(n.has_value(), s << ": " << why);
    return *n;
}

std::string refused(const char* s) {
    std::string why;
    BOOST_TEST(!ip_network::parse(s, why).has_value(), s);
    return why;
}

}  // namespace

BOOST_AUTO_TEST_CASE(blocks_contain_their_addresses) {
    BOOST_TEST(net("10.0.0.0/8").contains(addr("10.255.1.2")));
    BOOST_TEST(!net("10.0.0.0/8").contains(addr("11.0.0.1")));
    BOOST_TEST(net("192.168.1.0/25").contains(addr("192.168.1.127")));
    BOOST_TEST(!net("192.168.1.0/25").contains(addr("192.168.1.128")));
    BOOST_TEST(net("0.0.0.0/0").contains(addr("203.0.113.9")));
    BOOST_TEST(net("127.0.0.1").contains(addr("127.0.0.1")));
    BOOST_TEST(!net("127.0.0.1").contains(addr("127.0.0.2")));
    BOOST_TEST(net("fd00::/8").contains(addr("fd12::1")));
    BOOST_TEST(!net("fd00::/8").contains(addr("fe80::1")));
    BOOST_TEST(net("::1").contains(addr("::1")));
    BOOST_TEST(!net("::1").contains(addr("127.0.0.1")));  // families never mix
}

BOOST_AUTO_TEST_CASE(mapped_ipv4_peers_match_ipv4_blocks) {
    const trusted_networks t({net("127.0.0.0/8")});
    BOOST_TEST(t.contains(addr("::ffff:127.0.0.1")));
    BOOST_TEST(!t.contains(addr("::ffff:10.0.0.1")));
    BOOST_TEST(trusted_networks({}, true).contains(addr("203.0.113.9")));
    BOOST_TEST(!trusted_networks().contains(addr("127.0.0.1")));
}

BOOST_AUTO_TEST_CASE(bad_entries_say_why) {
    BOOST_TEST(refused("10.0.0.1/8").find("10.0.0.0/8") != std::string::npos);  // host bits set
    BOOST_TEST(refused("10.0.0.0/33").find("0..32") != std::string::npos);
    BOOST_TEST(refused("fd00::/129").find("0..128") != std::string::npos);
    BOOST_TEST(refused("10.0.0.0/").find("prefix") != std::string::npos);
    BOOST_TEST(refused("10.0.0.0/08").find("prefix") != std::string::npos);
    BOOST_TEST(refused("localhost").find("not an IP address") != std::string::npos);
    BOOST_TEST(refused("10.0.0").find("not an IP address") != std::string::npos);
    BOOST_TEST(!refused("").empty());
}
