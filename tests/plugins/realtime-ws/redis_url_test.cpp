// realtime.bus as a Redis URL: what is accepted, and what each mistake says.
#define BOOST_TEST_MODULE realtime_redis_url
#include <boost/test/unit_test.hpp>

#include <string>

#include "redis_url.hpp"

using m0::realtime::parse_redis_url;
using m0::realtime::redis_address;

namespace {

redis_address ok(const std::string& url) {
    std::string error;
    auto a = parse_redis_url(url, error);
    BOOST_TEST_REQUIRE(a.has_value(), url << ": " << error);
    return *a;
}

std::string error_of(const std::string& url) {
    std::string error;
    auto a = parse_redis_url(url, error);
    BOOST_TEST(!a.has_value(), url);
    return error;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tcp_host_port_db) {
    auto a = ok("redis://cache.internal:6380/2");
    BOOST_TEST((a.kind == redis_address::transport::tcp));
    BOOST_TEST(a.host == "cache.internal");
    BOOST_TEST(a.port == 6380);
    BOOST_TEST(a.db == 2u);
    BOOST_TEST(a.password.empty());
    BOOST_TEST(a.display() == "redis://cache.internal:6380/2");
}

BOOST_AUTO_TEST_CASE(tcp_defaults) {
    auto a = ok("redis://10.0.0.5");
    BOOST_TEST(a.port == 6379);
    BOOST_TEST(a.db == 0u);
    BOOST_TEST(ok("redis://10.0.0.5/").db == 0u);
}

BOOST_AUTO_TEST_CASE(ipv6_in_brackets) {
    auto a = ok("redis://[::1]:7000/0");
    BOOST_TEST(a.host == "::1");
    BOOST_TEST(a.port == 7000);
    BOOST_TEST(a.display() == "redis://[::1]:7000/0");
    BOOST_TEST(ok("redis://[::1]").port == 6379);
}

BOOST_AUTO_TEST_CASE(credentials_are_decoded_and_never_displayed) {
    auto a = ok("redis://app:s%40cret%3A1@127.0.0.1:6379/0");
    BOOST_TEST(a.username == "app");
    BOOST_TEST(a.password == "s@cret:1");
    BOOST_TEST(a.display() == "redis://app:***@127.0.0.1:6379/0");
    auto b = ok("redis://:only-password@h");
    BOOST_TEST(b.username.empty());
    BOOST_TEST(b.password == "only-password");
}

BOOST_AUTO_TEST_CASE(unix_socket) {
    auto a = ok("unix:///run/redis/redis.sock");
    BOOST_TEST((a.kind == redis_address::transport::unix_socket));
    BOOST_TEST(a.path == "/run/redis/redis.sock");
    BOOST_TEST(a.display() == "unix:///run/redis/redis.sock");
    auto b = ok("unix://:pw@/run/redis.sock?db=3");
    BOOST_TEST(b.path == "/run/redis.sock");
    BOOST_TEST(b.password == "pw");
    BOOST_TEST(b.db == 3u);
}

BOOST_AUTO_TEST_CASE(mistakes_say_what_is_wrong) {
    BOOST_TEST(error_of("redis:/localhost").find("redis://host:port/db") != std::string::npos);
    BOOST_TEST(error_of("memcached://x").find("expected 'memory'") != std::string::npos);
    BOOST_TEST(error_of("redis://").find("no host") != std::string::npos);
    BOOST_TEST(error_of("redis://:6379/0").find("no host") != std::string::npos);
    BOOST_TEST(error_of("redis://h:0").find("port must be a number 1..65535") != std::string::npos);
    BOOST_TEST(error_of("redis://h:65536").find("port must be") != std::string::npos);
    BOOST_TEST(error_of("redis://h:63a9").find("'63a9'") != std::string::npos);
    BOOST_TEST(error_of("redis://h:").find("empty port") != std::string::npos);
    BOOST_TEST(error_of("redis://h/zero").find("database must be a number") != std::string::npos);
    BOOST_TEST(error_of("redis://[::1:6379").find("closing ']'") != std::string::npos);
    BOOST_TEST(error_of("redis://user@h").find("credentials") != std::string::npos);
    BOOST_TEST(error_of("redis://:%zz@h").find("percent-encoding") != std::string::npos);
    BOOST_TEST(error_of("redis://:%4@h").find("percent-encoding") != std::string::npos);
    BOOST_TEST(error_of("unix://relative.sock").find("absolute") != std::string::npos);
    BOOST_TEST(error_of("unix:///").find("no socket path") != std::string::npos);
    BOOST_TEST(error_of("unix:///r.sock?timeout=1").find("db=N") != std::string::npos);
    BOOST_TEST(error_of("unix:///" + std::string(120, 'x')).find("longer than 107 bytes") != std::string::npos);
}
