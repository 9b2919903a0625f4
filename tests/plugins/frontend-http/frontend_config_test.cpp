#include <boost/test/unit_test.hpp>

#include <m0/config.hpp>

#include "frontend_config.hpp"
#include "support/temp_dir.hpp"

using namespace m0::frontend_http;
namespace testing = m0::testing;

namespace {

frontend_config parse(const std::string& yaml) {
    auto doc = m0::config_document::from_string(yaml, "test.yaml");
    return parse_frontend_config(doc.root().child("frontend"));
}

// The error message for `yaml`, or "" if it parsed.
std::string error_of(const std::string& yaml) {
    try {
        parse(yaml);
    } catch (const m0::config_error& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(frontend_config_parsing)

BOOST_AUTO_TEST_CASE(route_defaults) {
    auto cfg = parse("frontend:\n  type: http\n  routes:\n    - path: /hello\n      body: \"Hello, World!\"\n");
    BOOST_TEST_REQUIRE(cfg.routes.size() == 1u);
    const auto& r = cfg.routes[0];
    BOOST_TEST(r.path == "/hello");
    BOOST_TEST(!r.prefix);
    BOOST_TEST(r.status == 200u);
    BOOST_TEST(r.body == "Hello, World!");
    BOOST_TEST((r.methods == std::vector<std::string>{"GET", "HEAD"}));
    BOOST_TEST_REQUIRE(r.headers.size() == 1u);  // a body without Content-Type gets text/plain
    BOOST_TEST(r.headers[0].name == "Content-Type");
    BOOST_TEST(r.headers[0].value == "text/plain");
    BOOST_TEST(r.delay.count() == 0);
}

BOOST_AUTO_TEST_CASE(route_with_everything) {
    auto cfg = parse(
        "frontend:\n  type: http\n  routes:\n"
        "    - {path: /api/*, method: [GET, POST], status: 201, headers: {X-A: b, Content-Type: application/json},"
        " body: '{}', delay: 250ms}\n"
        "    - {path: /echo, method: '*', echo: true}\n");
    BOOST_TEST_REQUIRE(cfg.routes.size() == 2u);
    const auto& r = cfg.routes[0];
    BOOST_TEST(r.path == "/api/");
    BOOST_TEST(r.prefix);
    BOOST_TEST((r.methods == std::vector<std::string>{"GET", "POST", "HEAD"}));
    BOOST_TEST(r.status == 201u);
    BOOST_TEST(r.headers.size() == 2u);
    BOOST_TEST(r.delay == std::chrono::milliseconds(250));
    BOOST_TEST(cfg.routes[1].echo);
    BOOST_TEST(cfg.routes[1].methods.empty());
}

BOOST_AUTO_TEST_CASE(static_single_map_and_list) {
    testing::temp_dir dir;
    dir.write("site/index.html", "x");
    auto root = (dir.path() / "site").string();
    auto one = parse("frontend:\n  type: http\n  static: {root: '" + root + "'}\n");
    BOOST_TEST_REQUIRE(one.statics.size() == 1u);
    BOOST_TEST(one.statics[0].prefix == "/");
    BOOST_TEST(one.statics[0].index == "index.html");
    BOOST_TEST(one.statics[0].root == root);
    auto two = parse("frontend:\n  type: http\n  static:\n    - {prefix: /assets, root: '" + root +
                     "', index: ''}\n    - {prefix: /, root: '" + root + "'}\n");
    BOOST_TEST_REQUIRE(two.statics.size() == 2u);
    BOOST_TEST(two.statics[0].prefix == "/assets/");
    BOOST_TEST(two.statics[0].index == "");
}

BOOST_AUTO_TEST_CASE(relative_root_resolves_against_the_config_file) {
    testing::temp_dir dir;
    dir.write("site/index.html", "x");
    dir.write("conf/m0.yaml", "frontend:\n  type: http\n  static: {root: ../site}\n");
    auto doc = m0::config_document::load((dir.path() / "conf/m0.yaml").string());
    auto cfg = parse_frontend_config(doc.root().child("frontend"));
    BOOST_TEST_REQUIRE(cfg.statics.size() == 1u);
    BOOST_TEST(cfg.statics[0].root == std::filesystem::canonical(dir.path() / "site").string());
}

BOOST_AUTO_TEST_CASE(errors_name_the_key_and_the_location) {
    auto e = error_of("frontend:\n  type: http\n  rutes: []\n");
    BOOST_TEST(contains(e, "rutes"));
    BOOST_TEST(contains(e, "test.yaml:3"));

    e = error_of("frontend:\n  type: http\n  routes:\n    - {path: /x, bdy: hi}\n");
    BOOST_TEST(contains(e, "bdy"));
    BOOST_TEST(contains(e, "test.yaml:4"));

    e = error_of("frontend:\n  type: http\n  routes:\n    - {body: hi}\n");
    BOOST_TEST(contains(e, "path"));

    e = error_of("frontend:\n  type: http\n  routes:\n    - {path: hello}\n");
    BOOST_TEST(contains(e, "path"));

    e = error_of("frontend:\n  type: http\n  routes:\n    - {path: /x, status: 42}\n");
    BOOST_TEST(contains(e, "status"));

    e = error_of("frontend:\n  type: http\n  routes:\n    - {path: /x, headers: {Content-Length: '5'}}\n");
    BOOST_TEST(contains(e, "Content-Length"));

    e = error_of("frontend:\n  type: http\n  routes:\n    - {path: /x, echo: true, body: hi}\n");
    BOOST_TEST(contains(e, "echo"));

    e = error_of("frontend:\n  type: http\n  routes:\n    - {path: /x, delay: soon}\n");
    BOOST_TEST(contains(e, "delay"));

    e = error_of("frontend:\n  type: http\n  static: {root: /nonexistent/m0/site}\n");
    BOOST_TEST(contains(e, "root"));
    BOOST_TEST(contains(e, "/nonexistent/m0/site"));

    e = error_of("frontend:\n  type: http\n  static: {root: /, indx: a.html}\n");
    BOOST_TEST(contains(e, "indx"));
}

BOOST_AUTO_TEST_CASE(every_error_of_the_section_is_reported_in_one_run) {
    const auto e = error_of(
        "frontend:\n"
        "  type: http\n"
        "  rutes: []\n"                                    // 3
        "  routes:\n"
        "    - {path: /a, status: 42, bdy: hi}\n"           // 5: two errors in one route
        "    - {path: /b, delay: soon, headers: {Content-Length: '5', 'a b': x}}\n"  // 6: three
        "  static: {root: /nonexistent/m0/site, indx: a.html}\n");  // 7: two
    for (const auto* error : {"test.yaml:3:3: frontend.rutes: unknown key 'rutes' (did you mean 'routes'?)",
                              "test.yaml:5:30: frontend.routes[0].bdy: unknown key 'bdy' (did you mean 'body'?)",
                              "test.yaml:5:26: frontend.routes[0].status: expected an integer in 200..599, found '42'",
                              "test.yaml:6:25: frontend.routes[1].delay: expected a duration",
                              "frontend.routes[1].headers.Content-Length: this header is set by the HTTP engine",
                              "frontend.routes[1].headers.a b: not a valid header name",
                              "frontend.static.indx: unknown key 'indx'",
                              "frontend.static.root: not a directory: /nonexistent/m0/site"})
        BOOST_TEST(contains(e, error), "missing '" << error << "' in\n" << e);
}

BOOST_AUTO_TEST_CASE(websocket_route_defaults_and_keys) {
    auto cfg = parse("frontend:\n  type: http\n  routes:\n    - {path: /ws, websocket: echo}\n");
    BOOST_TEST_REQUIRE(cfg.routes[0].websocket.has_value());
    const auto& d = *cfg.routes[0].websocket;
    BOOST_TEST(d.session.max_message_size == 1024u * 1024u);
    BOOST_TEST(d.handshake.deflate.enabled);
    BOOST_TEST(d.handshake.deflate.server_no_context_takeover);
    cfg = parse(
        "frontend:\n  type: http\n  routes:\n    - path: /ws\n      websocket:\n        handler: echo\n"
        "        max_message_size: 16m\n        ping_interval: 0s\n        idle_timeout: 30s\n"
        "        subprotocols: [chat]\n        permessage_deflate: {client_max_window_bits: 10, level: 6}\n");
    const auto& w = *cfg.routes[0].websocket;
    BOOST_TEST(w.session.max_message_size == 16u * 1024u * 1024u);
    BOOST_TEST(w.session.ping_interval.count() == 0);
    BOOST_TEST(std::chrono::duration_cast<std::chrono::seconds>(w.session.idle_timeout).count() == 30);
    BOOST_TEST(w.handshake.subprotocols.at(0) == "chat");
    BOOST_TEST(w.handshake.deflate.client_max_window_bits == 10);
    BOOST_TEST(w.handshake.deflate.level == 6);
    cfg = parse("frontend:\n  type: http\n  routes:\n    - path: /ws\n      websocket: {handler: echo, permessage_deflate: false}\n");
    BOOST_TEST(!cfg.routes[0].websocket->handshake.deflate.enabled);
}

BOOST_AUTO_TEST_CASE(websocket_route_errors) {
    const std::string head = "frontend:\n  type: http\n  routes:\n    - ";
    BOOST_TEST(contains(error_of(head + "{path: /ws, websocket: chat}\n"), "expected `echo`"));
    BOOST_TEST(contains(error_of(head + "{path: /ws, websocket: echo, body: hi}\n"), "`body` does not apply"));
    BOOST_TEST(contains(error_of(head + "{path: /ws, websocket: {handler: echo, max_mesage_size: 1k}}\n"),
                        "max_message_size"));
    BOOST_TEST(contains(error_of(head + "{path: /ws, websocket: {handler: echo, permessage_deflate: {server_max_window_bits: 8}}}\n"),
                        "server_max_window_bits"));
    BOOST_TEST(contains(error_of(head + "{path: /ws, websocket: {handler: echo, subprotocols: [\"a b\"]}}\n"),
                        "not a valid subprotocol"));
    BOOST_TEST(contains(error_of(head + "{path: /ws, websocket: {handler: echo, ping_timeout: 0s}}\n"), "ping_timeout"));
}

BOOST_AUTO_TEST_SUITE_END()
