#include <m0/websocket/handshake.hpp>

#include <boost/test/unit_test.hpp>

namespace ws = m0::websocket;

namespace {

// The sample handshake of RFC 6455 section 1.3.
m0::http::request sample(std::vector<m0::http::header_field> extra = {}) {
    m0::http::request req;
    req.method = "GET";
    req.target = req.path = "/chat";
    req.headers = {{"Host", "server.example.com"},
                   {"Upgrade", "websocket"},
                   {"Connection", "keep-alive, Upgrade"},
                   {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                   {"Origin", "http://example.com"},
                   {"Sec-WebSocket-Version", "13"}};
    for (auto& h : extra) req.headers.push_back(h);
    return req;
}

std::string header(const ws::handshake_result& r, std::string_view name) {
    for (const auto& h : r.headers)
        if (h.name == name) return h.value;
    return "<none>";
}

void drop(m0::http::request& req, std::string_view name) {
    std::erase_if(req.headers, [&](const auto& h) { return h.name == name; });
}

void set(m0::http::request& req, std::string_view name, std::string_view value) {
    for (auto& h : req.headers)
        if (h.name == name) h.value = value;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(handshake_tests)

BOOST_AUTO_TEST_CASE(rfc_sample_is_accepted) {
    BOOST_TEST(ws::accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    auto r = ws::check_handshake(sample(), {});
    BOOST_TEST(r.accepted);
    BOOST_TEST(r.status == 101u);
    BOOST_TEST(header(r, "Upgrade") == "websocket");
    BOOST_TEST(header(r, "Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    BOOST_TEST(header(r, "Sec-WebSocket-Protocol") == "<none>");
    BOOST_TEST(r.origin.value_or("") == "http://example.com");
}

BOOST_AUTO_TEST_CASE(tokens_are_case_insensitive_and_split_across_headers) {
    auto req = sample({{"connection", "UPGRADE"}});
    set(req, "Connection", "keep-alive");
    set(req, "Upgrade", "WebSocket");
    BOOST_TEST(ws::check_handshake(req, {}).accepted);
}

BOOST_AUTO_TEST_CASE(not_an_upgrade_is_426_naming_the_version) {
    auto req = sample();
    drop(req, "Upgrade");
    auto r = ws::check_handshake(req, {});
    BOOST_TEST(!r.accepted);
    BOOST_TEST(r.status == 426u);
    BOOST_TEST(header(r, "Sec-WebSocket-Version") == "13");
    BOOST_TEST(header(r, "Upgrade") == "websocket");
}

BOOST_AUTO_TEST_CASE(wrong_or_missing_version_is_426) {
    for (std::string_view v : {"8", "13, 8", ""}) {
        auto req = sample();
        if (v.empty()) drop(req, "Sec-WebSocket-Version");
        else set(req, "Sec-WebSocket-Version", v);
        auto r = ws::check_handshake(req, {});
        BOOST_TEST(r.status == 426u, v);
        BOOST_TEST(header(r, "Sec-WebSocket-Version") == "13");
    }
}

BOOST_AUTO_TEST_CASE(bad_requests_are_400_with_a_reason) {
    auto no_connection = sample();
    set(no_connection, "Connection", "keep-alive");
    auto post = sample();
    post.method = "POST";
    auto http10 = sample();
    http10.version = 10;
    auto no_key = sample();
    drop(no_key, "Sec-WebSocket-Key");
    auto short_key = sample();
    set(short_key, "Sec-WebSocket-Key", "c2hvcnQ=");
    auto bad_chars = sample();
    set(bad_chars, "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25j*Q==");
    auto two_keys = sample({{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}});
    for (const auto* req : {&no_connection, &post, &http10, &no_key, &short_key, &bad_chars, &two_keys}) {
        auto r = ws::check_handshake(*req, {});
        BOOST_TEST(!r.accepted);
        BOOST_TEST(r.status == 400u);
        BOOST_TEST(!r.body.empty());
        BOOST_TEST(header(r, "Sec-WebSocket-Version") == "13");
    }
}

BOOST_AUTO_TEST_CASE(subprotocol_is_the_servers_first_choice_the_client_offered) {
    ws::handshake_options o;
    o.subprotocols = {"v2.chat", "chat"};
    auto r = ws::check_handshake(sample({{"Sec-WebSocket-Protocol", "chat, v2.chat"}}), o);
    BOOST_TEST(r.subprotocol == "v2.chat");
    BOOST_TEST(header(r, "Sec-WebSocket-Protocol") == "v2.chat");
    r = ws::check_handshake(sample({{"Sec-WebSocket-Protocol", "mqtt"}}), o);
    BOOST_TEST(r.accepted);
    BOOST_TEST(r.subprotocol.empty());
    BOOST_TEST(header(r, "Sec-WebSocket-Protocol") == "<none>");
}

BOOST_AUTO_TEST_CASE(a_selector_hook_decides_but_only_among_offers) {
    ws::handshake_options o;
    o.select_subprotocol = [](const std::vector<std::string_view>& offered) -> std::optional<std::string> {
        return std::string(offered.back());
    };
    BOOST_TEST(ws::check_handshake(sample({{"Sec-WebSocket-Protocol", "a, b"}}), o).subprotocol == "b");
    o.select_subprotocol = [](const auto&) -> std::optional<std::string> { return "not-offered"; };
    BOOST_TEST(ws::check_handshake(sample({{"Sec-WebSocket-Protocol", "a"}}), o).subprotocol.empty());
}

BOOST_AUTO_TEST_CASE(deflate_is_answered_in_the_101) {
    auto r = ws::check_handshake(sample({{"Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"}}), {});
    BOOST_TEST(r.deflate.has_value());
    BOOST_TEST(header(r, "Sec-WebSocket-Extensions") == "permessage-deflate; server_no_context_takeover");
    ws::handshake_options off;
    off.deflate.enabled = false;
    r = ws::check_handshake(sample({{"Sec-WebSocket-Extensions", "permessage-deflate"}}), off);
    BOOST_TEST(!r.deflate.has_value());
    BOOST_TEST(header(r, "Sec-WebSocket-Extensions") == "<none>");
}

BOOST_AUTO_TEST_SUITE_END()
