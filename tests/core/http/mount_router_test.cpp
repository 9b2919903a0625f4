#define BOOST_TEST_MODULE mount_router
// Which mount a path goes to: the longest prefix it lies under, segment by
// segment.
#include <boost/test/unit_test.hpp>

#include "http/mount_router.hpp"

using m0::http::mount_router;
using m0::http::path_under_prefix;

namespace {

// The prefix of the mount serving `path`, or "<404>".
std::string routed(const mount_router& router, const std::vector<std::string>& prefixes, std::string_view path) {
    const auto found = router.find(path);
    return found ? prefixes.at(*found) : "<404>";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mount_router_suite)

BOOST_AUTO_TEST_CASE(a_prefix_matches_whole_segments_only) {
    BOOST_TEST(path_under_prefix("/api", "/api"));
    BOOST_TEST(path_under_prefix("/api/", "/api"));
    BOOST_TEST(path_under_prefix("/api/x/y", "/api"));
    BOOST_TEST(!path_under_prefix("/apix", "/api"));
    BOOST_TEST(!path_under_prefix("/ap", "/api"));
    BOOST_TEST(!path_under_prefix("/", "/api"));
    BOOST_TEST(!path_under_prefix("/API", "/api"));
    BOOST_TEST(path_under_prefix("/a/b/c", "/a/b"));
    BOOST_TEST(!path_under_prefix("/a/bc", "/a/b"));
}

BOOST_AUTO_TEST_CASE(the_root_prefix_matches_every_path) {
    for (const char* path : {"/", "/x", "/api/x", "*", ""}) BOOST_TEST(path_under_prefix(path, ""));
}

BOOST_AUTO_TEST_CASE(the_longest_matching_prefix_wins_whatever_the_order) {
    const std::vector<std::string> prefixes = {"", "/api", "/api/v2", "/static"};
    const mount_router router(prefixes);
    BOOST_TEST(routed(router, prefixes, "/") == "");
    BOOST_TEST(routed(router, prefixes, "/apix") == "");
    BOOST_TEST(routed(router, prefixes, "/api") == "/api");
    BOOST_TEST(routed(router, prefixes, "/api/v1/x") == "/api");
    BOOST_TEST(routed(router, prefixes, "/api/v2") == "/api/v2");
    BOOST_TEST(routed(router, prefixes, "/api/v2/users") == "/api/v2");
    BOOST_TEST(routed(router, prefixes, "/api/v22") == "/api");
    BOOST_TEST(routed(router, prefixes, "/static/css/a.css") == "/static");

    const std::vector<std::string> reversed(prefixes.rbegin(), prefixes.rend());
    const mount_router other(reversed);
    BOOST_TEST(routed(other, reversed, "/api/v2/users") == "/api/v2");
    BOOST_TEST(routed(other, reversed, "/elsewhere") == "");
}

BOOST_AUTO_TEST_CASE(without_a_root_mount_other_paths_match_nothing) {
    const std::vector<std::string> prefixes = {"/static", "/app"};
    const mount_router router(prefixes);
    BOOST_TEST(routed(router, prefixes, "/") == "<404>");
    BOOST_TEST(routed(router, prefixes, "/staticx") == "<404>");
    BOOST_TEST(routed(router, prefixes, "/app/") == "/app");
}

BOOST_AUTO_TEST_CASE(a_mount_binds_one_handler_per_worker) {
    struct null_handler final : m0::http::handler {
        void on_request(m0::http::exchange_ptr) override {}
    } h;
    mount_router router({"/a", "/b"});
    BOOST_TEST(!router.bound(0));
    router.binding(0).bind(h);
    BOOST_TEST(router.bound(0));
    BOOST_TEST(!router.bound(1));
    BOOST_CHECK_THROW(router.binding(0).bind(h), std::logic_error);
}

BOOST_AUTO_TEST_CASE(the_matched_mount_decides_whether_a_body_streams) {
    struct streaming_handler final : m0::http::handler {
        void on_request(m0::http::exchange_ptr) override {}
        bool stream_body(const m0::http::request&) override { return true; }
    } streams;
    struct whole_handler final : m0::http::handler {
        void on_request(m0::http::exchange_ptr) override {}
    } whole;
    mount_router router({"/upload", ""});
    router.binding(0).bind(streams);
    router.binding(1).bind(whole);
    m0::http::request req;
    req.path = "/upload/big";
    BOOST_TEST(router.stream_body(req));
    req.path = "/uploads";
    BOOST_TEST(!router.stream_body(req));

    mount_router without_root({"/upload"});
    without_root.binding(0).bind(streams);
    req.path = "/elsewhere";
    BOOST_TEST(!without_root.stream_body(req));
}

BOOST_AUTO_TEST_SUITE_END()
