#include <boost/test/unit_test.hpp>

#include <m0/http.hpp>

#include "http/request_parser.hpp"

using m0::http::detail::parse_status;
using m0::http::detail::request_data;
using m0::http::detail::request_parser;

namespace {

// Feeds `input` in pieces of `step` bytes the way the connection does: the
// unconsumed rest stays at the front of the buffer.
parse_status parse_in_steps(request_parser& p, request_data& out, const std::string& input, std::size_t step) {
    p.start(out);
    std::string buffer;
    std::size_t sent = 0;
    for (;;) {
        std::size_t used = 0;
        auto st = p.feed(buffer.data(), buffer.size(), used);
        buffer.erase(0, used);
        if (st == parse_status::complete || st == parse_status::error) return st;
        if (st == parse_status::head_done) continue;
        if (sent == input.size()) return st;
        const auto n = std::min(step, input.size() - sent);
        buffer.append(input, sent, n);
        sent += n;
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(request_parsing)

BOOST_AUTO_TEST_CASE(same_result_whole_and_byte_by_byte) {
    const std::string input =
        "PUT /p/a?q=1 HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    m0::http_limits limits;
    for (std::size_t step : {input.size(), std::size_t{1}, std::size_t{7}}) {
        BOOST_TEST_CONTEXT("step " << step) {
            request_parser p(limits);
            request_data out;
            BOOST_REQUIRE(parse_in_steps(p, out, input, step) == parse_status::complete);
            BOOST_TEST(out.req.method == "PUT");
            BOOST_TEST(out.req.path == "/p/a");
            BOOST_TEST(out.req.query == "q=1");
            BOOST_TEST(out.req.body == "abcde");
            BOOST_REQUIRE(out.req.headers.size() == 4u);
            BOOST_TEST(out.req.headers[1].name == "X-A");
            BOOST_TEST(out.req.headers[2].value == "2");
            BOOST_TEST(*out.req.header("x-a") == "1");  // first of duplicates
            BOOST_TEST(!out.req.header("missing"));
            BOOST_TEST(out.req.keep_alive);
        }
    }
}

BOOST_AUTO_TEST_CASE(views_survive_the_input_buffer) {
    m0::http_limits limits;
    request_parser p(limits);
    request_data out;
    p.start(out);
    std::string buffer = "GET /x HTTP/1.0\r\nA: b\r\n\r\n";
    std::size_t used = 0;
    BOOST_REQUIRE(p.feed(buffer.data(), buffer.size(), used) == parse_status::complete);
    buffer.assign(buffer.size(), '#');  // the connection reuses its buffer
    BOOST_TEST(out.req.target == "/x");
    BOOST_TEST(out.req.headers[0].value == "b");
    BOOST_TEST(out.req.version == 10u);
    BOOST_TEST(!out.req.keep_alive);
}

BOOST_AUTO_TEST_CASE(nothing_is_consumed_until_the_head_is_whole) {
    // The caller drops consumed bytes; views into them would dangle.
    m0::http_limits limits;
    request_parser p(limits);
    request_data out;
    p.start(out);
    std::string buffer = "GET /x HTTP/1.1\r\nHost: a\r\n";
    std::size_t used = 0;
    BOOST_TEST((p.feed(buffer.data(), buffer.size(), used) == parse_status::need_more));
    BOOST_TEST(used == 0u);
    buffer += "\r\n";
    BOOST_TEST((p.feed(buffer.data(), buffer.size(), used) == parse_status::complete));
    BOOST_TEST(used == buffer.size());
    BOOST_TEST(out.req.target == "/x");
}

BOOST_AUTO_TEST_CASE(bare_lf_is_rejected_not_waited_for) {
    m0::http_limits limits;
    request_parser p(limits);
    request_data out;
    BOOST_TEST((parse_in_steps(p, out, "GET / HTTP/1.1\nHost: a\n\n", 100) == parse_status::error));
    BOOST_TEST(p.error_status() == 400u);
}

BOOST_AUTO_TEST_CASE(limits_map_to_statuses) {
    m0::http_limits limits;
    limits.max_body_size = 10;
    limits.max_header_size = 64;
    request_parser p(limits);
    request_data out;
    BOOST_TEST((parse_in_steps(p, out, "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 100) == parse_status::error));
    BOOST_TEST(p.error_status() == 413u);
    BOOST_TEST((parse_in_steps(p, out, "GET / HTTP/1.1\r\nX: " + std::string(100, 'v') + "\r\n\r\n", 100) ==
                parse_status::error));
    BOOST_TEST(p.error_status() == 431u);
    BOOST_TEST((parse_in_steps(p, out, "GET / HTTP/2.0\r\n\r\n", 100) == parse_status::error));
    BOOST_TEST(p.error_status() == 400u);
}

BOOST_AUTO_TEST_CASE(percent_decoding) {
    BOOST_TEST(*m0::http::percent_decode("/a%20b%2E%2e") == "/a b..");
    BOOST_TEST(*m0::http::percent_decode("plain+text") == "plain+text");
    BOOST_TEST(!m0::http::percent_decode("%2"));
    BOOST_TEST(!m0::http::percent_decode("%zz"));
    BOOST_TEST(!m0::http::percent_decode("abc%"));
}

BOOST_AUTO_TEST_CASE(reason_phrases) {
    BOOST_TEST(m0::http::reason_phrase(200) == "OK");
    BOOST_TEST(m0::http::reason_phrase(404) == "Not Found");
    BOOST_TEST(m0::http::reason_phrase(431) == "Request Header Fields Too Large");
    BOOST_TEST(m0::http::reason_phrase(799) == "Unknown");
}

BOOST_AUTO_TEST_SUITE_END()
