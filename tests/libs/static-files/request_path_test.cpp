#include <boost/test/unit_test.hpp>

#include <m0/static_files/request_path.hpp>

using namespace m0::static_files;

BOOST_AUTO_TEST_SUITE(request_paths)

BOOST_AUTO_TEST_CASE(plain_paths_are_normalized) {
    auto p = make_relative_path("css/site.css");
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->path == "css/site.css");
    BOOST_TEST(!p->trailing_slash);

    p = make_relative_path("a//./b/");
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->path == "a/b");
    BOOST_TEST(p->trailing_slash);

    p = make_relative_path("");
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->path == "");
    BOOST_TEST(p->trailing_slash);
}

BOOST_AUTO_TEST_CASE(escapes_are_decoded) {
    auto p = make_relative_path("with%20space.txt");
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->path == "with space.txt");
}

BOOST_AUTO_TEST_CASE(traversal_and_encoded_separators_are_refused) {
    for (const char* raw : {"..", "../etc/passwd", "a/../../b", "%2e%2e/x", "%2E%2E/x", "a/%2e%2e/%2e%2e/x",
                            "..%2fetc", "a%2fb", "a%2Fb", "a%5cb", "a%00b", "bad%zz", "bad%2"}) {
        BOOST_TEST_INFO(raw);
        BOOST_TEST(!make_relative_path(raw).has_value());
    }
}

BOOST_AUTO_TEST_CASE(dots_inside_names_are_fine) {
    auto p = make_relative_path("a..b/...");
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->path == "a..b/...");
}

BOOST_AUTO_TEST_SUITE_END()
