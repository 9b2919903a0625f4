#include <boost/test/unit_test.hpp>

#include <m0/static_files/cache_validators.hpp>
#include <m0/static_files/http_date.hpp>

using namespace m0::static_files;

namespace {

struct stat file_stat(std::time_t mtime, long nsec, off_t size) {
    struct stat st {};
    st.st_mtim.tv_sec = mtime;
    st.st_mtim.tv_nsec = nsec;
    st.st_size = size;
    return st;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cache_validators)

BOOST_AUTO_TEST_CASE(etag_changes_with_size_and_mtime) {
    auto base = make_etag(file_stat(1000, 5, 42));
    BOOST_TEST(base.front() == '"');
    BOOST_TEST(base.back() == '"');
    BOOST_TEST(base == make_etag(file_stat(1000, 5, 42)));
    BOOST_TEST(base != make_etag(file_stat(1000, 5, 43)));
    BOOST_TEST(base != make_etag(file_stat(1001, 5, 42)));
    BOOST_TEST(base != make_etag(file_stat(1000, 6, 42)));
}

BOOST_AUTO_TEST_CASE(if_none_match_uses_weak_comparison) {
    std::string etag = "\"abc\"";
    BOOST_TEST(etag_list_matches("\"abc\"", etag));
    BOOST_TEST(etag_list_matches("W/\"abc\"", etag));
    BOOST_TEST(etag_list_matches("\"x\", \"abc\"", etag));
    BOOST_TEST(etag_list_matches("*", etag));
    BOOST_TEST(!etag_list_matches("\"abcd\"", etag));
    BOOST_TEST(!etag_list_matches("abc", etag));
    BOOST_TEST(!etag_list_matches("", etag));
}

BOOST_AUTO_TEST_CASE(if_range_needs_a_strong_match_or_the_exact_date) {
    std::string etag = "\"abc\"";
    std::time_t mtime = 784111777;
    BOOST_TEST(if_range_allows(std::nullopt, etag, mtime));
    BOOST_TEST(if_range_allows(std::string_view("\"abc\""), etag, mtime));
    BOOST_TEST(!if_range_allows(std::string_view("W/\"abc\""), etag, mtime));
    BOOST_TEST(!if_range_allows(std::string_view("\"old\""), etag, mtime));
    BOOST_TEST(if_range_allows(std::string_view("Sun, 06 Nov 1994 08:49:37 GMT"), etag, mtime));
    BOOST_TEST(!if_range_allows(std::string_view("Sun, 06 Nov 1994 08:49:38 GMT"), etag, mtime));
    BOOST_TEST(!if_range_allows(std::string_view("soon"), etag, mtime));
}

BOOST_AUTO_TEST_SUITE_END()
