#include <m0/websocket/utf8_validator.hpp>

#include <boost/test/unit_test.hpp>

using m0::websocket::is_valid_utf8;
using m0::websocket::utf8_validator;

BOOST_AUTO_TEST_SUITE(utf8_validator_tests)

BOOST_AUTO_TEST_CASE(accepts_ascii_and_every_sequence_length) {
    BOOST_TEST(is_valid_utf8(""));
    BOOST_TEST(is_valid_utf8("hello"));
    BOOST_TEST(is_valid_utf8("\xC2\xA9"));              // ©
    BOOST_TEST(is_valid_utf8("\xE2\x82\xAC"));          // €
    BOOST_TEST(is_valid_utf8("\xF0\x9F\x98\x80"));      // 😀
    BOOST_TEST(is_valid_utf8("\xF4\x8F\xBF\xBF"));      // U+10FFFF
    BOOST_TEST(is_valid_utf8("\xED\x9F\xBF"));          // U+D7FF, just below the surrogates
}

BOOST_AUTO_TEST_CASE(refuses_overlongs_surrogates_and_out_of_range) {
    BOOST_TEST(!is_valid_utf8("\xC0\xAF"));            // overlong '/'
    BOOST_TEST(!is_valid_utf8("\xE0\x80\xAF"));        // overlong
    BOOST_TEST(!is_valid_utf8("\xF0\x80\x80\xAF"));    // overlong
    BOOST_TEST(!is_valid_utf8("\xED\xA0\x80"));        // U+D800
    BOOST_TEST(!is_valid_utf8("\xF4\x90\x80\x80"));    // U+110000
    BOOST_TEST(!is_valid_utf8("\xF5\x80\x80\x80"));
    BOOST_TEST(!is_valid_utf8("\x80"));                // lone continuation
    BOOST_TEST(!is_valid_utf8("\xFF"));
    BOOST_TEST(!is_valid_utf8("\xE2\x82"));            // truncated
}

BOOST_AUTO_TEST_CASE(a_character_split_across_pieces_is_valid) {
    utf8_validator v;
    BOOST_TEST(v.feed("a\xF0\x9F"));
    BOOST_TEST(!v.complete());
    BOOST_TEST(v.feed("\x98"));
    BOOST_TEST(v.feed("\x80z"));
    BOOST_TEST(v.complete());
}

BOOST_AUTO_TEST_CASE(fails_at_the_first_bad_byte_and_stays_failed) {
    utf8_validator v;
    BOOST_TEST(v.feed("\xCE\xBA\xE1\xBD\xB9"));
    BOOST_TEST(!v.feed("\xED\xA0"));  // a surrogate's lead is refused before the sequence ends
    BOOST_TEST(!v.feed("abc"));
    BOOST_TEST(!v.complete());
}

BOOST_AUTO_TEST_SUITE_END()
