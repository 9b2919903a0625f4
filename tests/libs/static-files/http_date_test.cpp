#include <boost/test/unit_test.hpp>

#include <m0/static_files/http_date.hpp>

using namespace m0::static_files;

BOOST_AUTO_TEST_SUITE(http_dates)

constexpr std::time_t rfc_example = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT

BOOST_AUTO_TEST_CASE(formats_imf_fixdate) {
    BOOST_TEST(format_http_date(rfc_example) == "Sun, 06 Nov 1994 08:49:37 GMT");
    BOOST_TEST(format_http_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT");
}

BOOST_AUTO_TEST_CASE(parses_the_three_forms) {
    BOOST_TEST(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").value_or(-1) == rfc_example);
    BOOST_TEST(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").value_or(-1) == rfc_example);
    BOOST_TEST(parse_http_date("Sun Nov  6 08:49:37 1994").value_or(-1) == rfc_example);
}

BOOST_AUTO_TEST_CASE(round_trips) {
    for (std::time_t t : {std::time_t{0}, std::time_t{951782400}, std::time_t{1764460800}, std::time_t{2147483647}}) {
        BOOST_TEST(parse_http_date(format_http_date(t)).value_or(-1) == t);
    }
}

BOOST_AUTO_TEST_CASE(rejects_garbage) {
    for (const char* s : {"", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Foo 1994 08:49:37 GMT",
                          "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z"}) {
        BOOST_TEST_INFO(s);
        BOOST_TEST(!parse_http_date(s).has_value());
    }
}

BOOST_AUTO_TEST_SUITE_END()
