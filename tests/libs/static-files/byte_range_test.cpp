#include <boost/test/unit_test.hpp>

#include <m0/static_files/byte_range.hpp>

using namespace m0::static_files;

namespace {

range_outcome parse(std::string_view header, std::uint64_t size, byte_range& r) {
    return parse_byte_range(header, size, r);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(byte_range_parsing)

BOOST_AUTO_TEST_CASE(closed_range_is_clipped_to_the_size) {
    byte_range r;
    BOOST_TEST((parse("bytes=0-9", 100, r) == range_outcome::satisfiable));
    BOOST_TEST(r.first == 0u);
    BOOST_TEST(r.last == 9u);
    BOOST_TEST(r.length() == 10u);
    BOOST_TEST((parse("bytes=90-1000", 100, r) == range_outcome::satisfiable));
    BOOST_TEST(r.first == 90u);
    BOOST_TEST(r.last == 99u);
}

BOOST_AUTO_TEST_CASE(open_and_suffix_ranges) {
    byte_range r;
    BOOST_TEST((parse("bytes=10-", 100, r) == range_outcome::satisfiable));
    BOOST_TEST(r.first == 10u);
    BOOST_TEST(r.last == 99u);
    BOOST_TEST((parse("bytes=-5", 100, r) == range_outcome::satisfiable));
    BOOST_TEST(r.first == 95u);
    BOOST_TEST(r.last == 99u);
    // A suffix longer than the file is the whole file.
    BOOST_TEST((parse("bytes=-500", 100, r) == range_outcome::satisfiable));
    BOOST_TEST(r.first == 0u);
    BOOST_TEST(r.last == 99u);
}

BOOST_AUTO_TEST_CASE(unit_is_case_insensitive_and_whitespace_tolerated) {
    byte_range r;
    BOOST_TEST((parse("Bytes = 1-2", 10, r) == range_outcome::satisfiable));
    BOOST_TEST(r.first == 1u);
    BOOST_TEST(r.last == 2u);
}

BOOST_AUTO_TEST_CASE(unsatisfiable_ranges) {
    byte_range r;
    BOOST_TEST((parse("bytes=100-200", 100, r) == range_outcome::unsatisfiable));
    BOOST_TEST((parse("bytes=100-", 100, r) == range_outcome::unsatisfiable));
    BOOST_TEST((parse("bytes=-0", 100, r) == range_outcome::unsatisfiable));
    BOOST_TEST((parse("bytes=0-", 0, r) == range_outcome::unsatisfiable));
    BOOST_TEST((parse("bytes=-3", 0, r) == range_outcome::unsatisfiable));
}

BOOST_AUTO_TEST_CASE(malformed_other_unit_and_multi_range_are_ignored) {
    byte_range r;
    for (const char* h : {"bytes=5-1", "bytes=a-b", "bytes=-", "bytes=1", "items=0-1", "bytes 0-1",
                          "bytes=0-1,5-6", "bytes=--1", "bytes=+1-2", "bytes=99999999999999999999999-"}) {
        BOOST_TEST_INFO(h);
        BOOST_TEST((parse(h, 100, r) == range_outcome::ignore));
    }
}

BOOST_AUTO_TEST_SUITE_END()
