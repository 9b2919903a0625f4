#include <string>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>

#include <m0/http.hpp>

#include "http1/request_parser.hpp"

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
    BOOST_TEST((parse_in_steps(p, out, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", 100) ==
                parse_status::error));
    BOOST_TEST(p.error_status() == 413u);
    BOOST_TEST((parse_in_steps(p, out, "GET / HTTP/1.1\r\nX: " + std::string(100, 'v') + "\r\n\r\n", 100) ==
                parse_status::error));
    BOOST_TEST(p.error_status() == 431u);
    BOOST_TEST((parse_in_steps(p, out, "GET / HTTP/2.0\r\n\r\n", 100) == parse_status::error));
    BOOST_TEST(p.error_status() == 505u);
}

BOOST_AUTO_TEST_CASE(rejections_are_the_same_however_the_bytes_arrive) {
    const std::string host = "Host: h\r\n";
    const std::string post = "POST / HTTP/1.1\r\n" + host;
    const std::string te = post + "Transfer-Encoding: chunked\r\n\r\n";
    const std::vector<std::pair<std::string, unsigned>> cases{
        {post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {post + "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400},
        {post + "Content-Length: +3\r\n\r\nabc", 400},
        {post + "Content-Length: 3, 3\r\n\r\nabc", 400},
        {post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
        {post + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400},
        {post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n\r\n", 400},                          // no Host
        {"GET / HTTP/1.1\r\n" + host + host + "\r\n", 400},         // two Hosts
        {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n" + host + "X-A : v\r\n\r\n", 400},   // space before colon
        {"GET / HTTP/1.1\r\n" + host + "X-A: a\r\n b\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n" + host + std::string("X-A: a\0b\r\n\r\n", 12), 400},
        {"GET / HTTP/1.1\r\n" + host + "X-A: a\rb\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n" + host + "X(A): v\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n" + host + "\n", 400},
        {"G{T / HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET  / HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET /a#b HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET /caf\xc3\xa9\x7f HTTP/1.1\r\n" + host + "\r\n", 400},  // DEL among bytes >= 0x80
        {"GET /caf\xc3\xa9?\x01 HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET /a%zz HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET /a?b=100% HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET /a?b\\c HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET * HTTP/1.1\r\n" + host + "\r\n", 400},
        {"GET / HTTP/1.x\r\n" + host + "\r\n", 400},
        {"GET / http/1.1\r\n" + host + "\r\n", 400},
        {"GET / HTTP/3.0\r\n" + host + "\r\n", 505},
        {te + "fffffffffffffffff1\r\n", 400},                        // overflows 64 bits
        {te + "5\r\nhelloX\r\n0\r\n\r\n", 400},                   // no CRLF after the data
        {te + "5 \r\nhello\r\n0\r\n\r\n", 400},
        {te + "5;a=\r\nhello\r\n0\r\n\r\n", 400},
        {te + "5;a=\"x\r\nhello\r\n0\r\n\r\n", 400},
        {te + "5\nhello\r\n0\r\n\r\n", 400},
        {te + "0\r\nX-T: a\r\n b\r\n\r\n", 400},
        {te + "0\r\nGET / HTTP/1.1\r\n\r\n", 400},
        {te + "0\r\nX-T: 1\r\ncontent-LENGTH: 5\r\n\r\n", 400},  // framing field as a trailer
    };
    m0::http_limits limits;
    for (const auto& [input, status] : cases) {
        for (std::size_t step : {input.size(), std::size_t{1}, std::size_t{3}}) {
            BOOST_TEST_CONTEXT(input << " in steps of " << step) {
                request_parser p(limits);
                request_data out;
                BOOST_TEST((parse_in_steps(p, out, input, step) == parse_status::error));
                BOOST_TEST(p.error_status() == status);
                BOOST_TEST(!p.error_reason().empty());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(target_forms_and_versions) {
    m0::http_limits limits;
    request_parser p(limits);
    request_data out;
    BOOST_REQUIRE((parse_in_steps(p, out, "GET http://a.example:8080/x/y?q=1 HTTP/1.2\r\nHost: b\r\n\r\n", 5) ==
                   parse_status::complete));
    BOOST_TEST(out.req.target == "http://a.example:8080/x/y?q=1");
    BOOST_TEST(out.req.path == "/x/y");
    BOOST_TEST(out.req.query == "q=1");
    BOOST_TEST(out.req.version == 11u);  // 1.2 is answered as 1.1

    out.clear();
    BOOST_REQUIRE((parse_in_steps(p, out, "OPTIONS * HTTP/1.1\r\nHost: b\r\n\r\n", 100) == parse_status::complete));
    BOOST_TEST(out.req.target == "*");

    // What browsers leave unescaped is accepted.
    out.clear();
    BOOST_REQUIRE((parse_in_steps(p, out, "GET /s{1}?a[0]={x}|y^`%25 HTTP/1.1\r\nHost: b\r\n\r\n", 100) ==
                   parse_status::complete));
    BOOST_TEST(out.req.path == "/s{1}");
    BOOST_TEST(out.req.query == "a[0]={x}|y^`%25");

    // Bytes >= 0x80 (UTF-8 sent unescaped) pass through as sent, in path and query.
    out.clear();
    BOOST_REQUIRE((parse_in_steps(p, out, "GET /caf\xc3\xa9/\xff?q=\xe9t\xc3\xa9 HTTP/1.1\r\nHost: b\r\n\r\n", 3) ==
                   parse_status::complete));
    BOOST_TEST(out.req.path == "/caf\xc3\xa9/\xff");
    BOOST_TEST(out.req.query == "q=\xe9t\xc3\xa9");

    // Empty lines before the request line are skipped (RFC 9112 2.2).
    out.clear();
    BOOST_REQUIRE((parse_in_steps(p, out, "\r\n\r\nGET /x HTTP/1.1\r\nHost: b\r\n\r\n", 1) ==
                   parse_status::complete));
    BOOST_TEST(out.req.method == "GET");
    BOOST_TEST(out.req.path == "/x");
}

BOOST_AUTO_TEST_CASE(field_values_are_trimmed_not_rewritten) {
    m0::http_limits limits;
    request_parser p(limits);
    request_data out;
    BOOST_REQUIRE((parse_in_steps(p, out, "GET / HTTP/1.1\r\nHost: b\r\nX-A: \t a \t b \t\r\nX-B:\r\n"
                                          "X-C: caf\xe9\r\n\r\n", 2) == parse_status::complete));
    BOOST_REQUIRE(out.req.headers.size() == 4u);
    BOOST_TEST(out.req.headers[1].value == "a \t b");
    BOOST_TEST(out.req.headers[2].value == "");
    BOOST_TEST(out.req.headers[3].value == "caf\xe9");
}

BOOST_AUTO_TEST_CASE(keep_alive_follows_version_and_connection) {
    m0::http_limits limits;
    request_parser p(limits);
    request_data out;
    auto keep_alive = [&](const std::string& input) {
        out.clear();
        BOOST_REQUIRE((parse_in_steps(p, out, input, 100) == parse_status::complete));
        return out.req.keep_alive;
    };
    BOOST_TEST(keep_alive("GET / HTTP/1.1\r\nHost: b\r\n\r\n"));
    BOOST_TEST(!keep_alive("GET / HTTP/1.1\r\nHost: b\r\nConnection: x, CLOSE\r\n\r\n"));
    BOOST_TEST(!keep_alive("GET / HTTP/1.0\r\n\r\n"));
    BOOST_TEST(keep_alive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
}

BOOST_AUTO_TEST_CASE(body_limit_is_decided_before_the_body) {
    m0::http_limits limits;
    limits.max_body_size = 10;
    request_parser p(limits);
    request_data out;
    p.start(out);
    // Content-Length over the limit: refused on the head alone.
    std::string head = "POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n";
    std::size_t used = 0;
    BOOST_TEST((p.feed(head.data(), head.size(), used) == parse_status::error));
    BOOST_TEST(p.error_status() == 413u);

    // Within the limit: the head is reported first, with 100-continue.
    p.start(out);
    head = "POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n";
    BOOST_TEST((p.feed(head.data(), head.size(), used) == parse_status::head_done));
    BOOST_TEST(used == head.size());
    BOOST_TEST(p.expects_continue());
    BOOST_TEST(p.body_pending());

    // Chunks are held to the same limit, counted over the whole body.
    out.clear();
    BOOST_TEST((parse_in_steps(p, out, "POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "6\r\nabcdef\r\n5\r\nghijk\r\n0\r\n\r\n", 4) == parse_status::error));
    BOOST_TEST(p.error_status() == 413u);
    BOOST_TEST(out.req.body.size() <= 10u);
}

BOOST_AUTO_TEST_CASE(trailers_count_against_the_header_limits) {
    m0::http_limits limits;
    limits.max_header_count = 4;
    limits.max_header_size = 64;
    const std::string head = "POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n";
    request_parser p(limits);
    request_data out;
    BOOST_TEST((parse_in_steps(p, out, head + "T1: 1\r\nT2: 2\r\n\r\n", 3) == parse_status::complete));
    BOOST_TEST(out.req.headers.size() == 2u);  // trailers are not merged into the header section
    out.clear();
    BOOST_TEST((parse_in_steps(p, out, head + "T1: 1\r\nT2: 2\r\nT3: 3\r\n\r\n", 3) == parse_status::error));
    BOOST_TEST(p.error_status() == 431u);
    out.clear();
    BOOST_TEST((parse_in_steps(p, out, head + "T: " + std::string(100, 'v') + "\r\n\r\n", 100) ==
                parse_status::error));
    BOOST_TEST(p.error_status() == 431u);
}

BOOST_AUTO_TEST_CASE(fields_that_must_not_be_trailers_are_refused) {
    const std::string head = "POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n";
    m0::http_limits limits;
    request_parser p(limits);
    request_data out;
    for (const char* name : {"Content-Length", "Transfer-Encoding", "Trailer", "Host", "Cache-Control", "Expect",
                             "Max-Forwards", "Pragma", "Range", "TE", "If-Match", "If-None-Match",
                             "If-Modified-Since", "If-Unmodified-Since", "If-Range", "Accept", "Accept-Charset",
                             "Accept-Encoding", "Accept-Language", "Authorization", "Proxy-Authorization",
                             "WWW-Authenticate", "Proxy-Authenticate", "Cookie", "Set-Cookie", "Age", "Date",
                             "Expires", "Location", "Retry-After", "Vary", "Warning", "Content-Encoding",
                             "Content-Type", "Content-Range"}) {
        BOOST_TEST_CONTEXT(name) {
            out.clear();
            BOOST_TEST((parse_in_steps(p, out, head + name + ": 1\r\n\r\n", 100) == parse_status::error));
            BOOST_TEST(p.error_status() == 400u);
        }
    }
    // Other fields, including names that merely start like a forbidden one, are dropped.
    for (const char* name : {"X-Checksum", "Server-Timing", "Hosts", "Content-Length-X", "Dates"}) {
        BOOST_TEST_CONTEXT(name) {
            out.clear();
            BOOST_TEST((parse_in_steps(p, out, head + name + ": 1\r\n\r\n", 100) == parse_status::complete));
            BOOST_TEST(out.req.body == "a");
        }
    }
}

BOOST_AUTO_TEST_CASE(pipelined_requests_are_parsed_one_after_the_other) {
    m0::http_limits limits;
    request_parser p(limits);
    std::string buffer =
        "POST /1 HTTP/1.1\r\nHost: b\r\nContent-Length: 3\r\n\r\nabc"
        "POST /2 HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\nX: y\r\n\r\n"
        "GET /3 HTTP/1.1\r\nHost: b\r\n\r\n";
    std::vector<std::string> seen;
    while (!buffer.empty()) {
        request_data out;
        p.start(out);
        parse_status st;
        do {
            std::size_t used = 0;
            st = p.feed(buffer.data(), buffer.size(), used);
            buffer.erase(0, used);
        } while (st == parse_status::head_done);
        BOOST_REQUIRE((st == parse_status::complete));
        seen.push_back(std::string(out.req.path) + ":" + out.req.body);
        p.stop();
    }
    BOOST_TEST(seen == (std::vector<std::string>{"/1:abc", "/2:de", "/3:"}), boost::test_tools::per_element());
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
