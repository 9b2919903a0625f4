#include <m0/websocket/deflate_negotiation.hpp>

#include <boost/test/unit_test.hpp>

namespace ws = m0::websocket;

namespace {

std::optional<ws::deflate_params> negotiate(std::string_view header, ws::deflate_options o = {}) {
    return ws::negotiate_deflate({header}, o);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(deflate_negotiation_tests)

BOOST_AUTO_TEST_CASE(defaults_compress_without_context_takeover) {
    auto p = negotiate("permessage-deflate");
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->response == "permessage-deflate; server_no_context_takeover");
    BOOST_TEST(p->server_no_context_takeover);
    BOOST_TEST(!p->client_no_context_takeover);
    BOOST_TEST(p->server_max_window_bits == 15);
    BOOST_TEST(p->client_max_window_bits == 15);
}

BOOST_AUTO_TEST_CASE(window_bits_are_at_most_what_both_allow) {
    ws::deflate_options o;
    o.client_max_window_bits = 10;
    auto p = negotiate("permessage-deflate; server_max_window_bits=12; client_max_window_bits", o);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->server_max_window_bits == 12);
    BOOST_TEST(p->client_max_window_bits == 10);
    BOOST_TEST(p->response ==
               "permessage-deflate; server_no_context_takeover; server_max_window_bits=12; client_max_window_bits=10");
    // A client that did not offer client_max_window_bits is never sent it.
    p = negotiate("permessage-deflate", o);
    BOOST_TEST(p->client_max_window_bits == 15);
    BOOST_TEST(p->response.find("client_max_window_bits") == std::string::npos);
    p = negotiate("permessage-deflate; client_max_window_bits=\"9\"", o);
    BOOST_TEST(p->client_max_window_bits == 9);
    // 8 is accepted; m0 then sends plain frames (zlib has no 256-byte window).
    p = negotiate("permessage-deflate; server_max_window_bits=8");
    BOOST_TEST(p->server_max_window_bits == 8);
}

BOOST_AUTO_TEST_CASE(context_takeover_can_be_kept_or_asked_away) {
    ws::deflate_options o;
    o.server_no_context_takeover = false;
    o.client_no_context_takeover = true;
    auto p = negotiate("permessage-deflate", o);
    BOOST_TEST(p->response == "permessage-deflate; client_no_context_takeover");
    p = negotiate("permessage-deflate; server_no_context_takeover", o);
    BOOST_TEST(p->server_no_context_takeover);
}

BOOST_AUTO_TEST_CASE(bad_offers_are_declined_and_the_next_one_taken) {
    BOOST_TEST(!negotiate("permessage-deflate; server_max_window_bits=7"));
    BOOST_TEST(!negotiate("permessage-deflate; server_max_window_bits=16"));
    BOOST_TEST(!negotiate("permessage-deflate; server_max_window_bits"));   // needs a value
    BOOST_TEST(!negotiate("permessage-deflate; server_max_window_bits=010"));
    BOOST_TEST(!negotiate("permessage-deflate; server_no_context_takeover=1"));
    BOOST_TEST(!negotiate("permessage-deflate; server_no_context_takeover; server_no_context_takeover"));
    BOOST_TEST(!negotiate("permessage-deflate; unknown"));
    BOOST_TEST(!negotiate("x-webkit-deflate-frame"));
    auto p = negotiate("foo, permessage-deflate; bogus, permessage-deflate; server_max_window_bits=10");
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->server_max_window_bits == 10);
    // Offers may also come in separate headers.
    BOOST_TEST(ws::negotiate_deflate({"foo", "permessage-deflate"}, {}).has_value());
    ws::deflate_options off;
    off.enabled = false;
    BOOST_TEST(!negotiate("permessage-deflate", off));
}

BOOST_AUTO_TEST_SUITE_END()
