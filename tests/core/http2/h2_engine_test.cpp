// The HTTP/2 engine through the same test handler the HTTP/1.1 engine's
// tests use (tests/core/http/test_server): prior-knowledge h2c from an
// nghttp2 client, exchanges, flow control driven by the handler's reads,
// resets seen as client gone, drain, the running-handler limit.
#define BOOST_TEST_MODULE h2_engine
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "core/http/test_server.hpp"
#include "core/http2/h2_test_client.hpp"
#include "http/client_policy.hpp"
#include "http2/stream_output.hpp"

using m0::test::eventually;
using m0::test::h2_test_client;
using m0::test::test_server;

namespace {

std::shared_ptr<const m0::http::client_policy> h2_policy(m0::http2::settings settings = {}) {
    auto policy = std::make_shared<m0::http::client_policy>();
    policy->proxy_protocol = {false};
    policy->tls = {false};
    policy->http2 = {true};
    policy->http2_settings = settings;
    return policy;
}

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
    return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(answers_over_h2c_with_the_same_handler) {
    test_server server({}, h2_policy());
    h2_test_client client(server.port());
    const auto fixed = client.request("GET", "/fixed");
    const auto inspect = client.request("GET", "/inspect?x=1", {{"x-test", "value"}});
    BOOST_REQUIRE(client.pump([&] { return client.stream(fixed).closed && client.stream(inspect).closed; }));
    BOOST_TEST(client.stream(fixed).status == 200);
    BOOST_TEST(client.stream(fixed).body == "Hello, World!");
    BOOST_TEST(client.stream(inspect).body == "GET|/inspect?x=1|/inspect|x=1|value");
    BOOST_TEST(server.stats().requests.load() == 2u);
}

BOOST_AUTO_TEST_CASE(plain_http1_still_served_on_an_h2_listener) {
    test_server server({}, h2_policy());
    // A client that does not open with the preface speaks HTTP/1.1.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    const std::string req = "GET /fixed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    BOOST_REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    BOOST_TEST(got.starts_with("HTTP/1.1 200"));
    BOOST_TEST(got.ends_with("Hello, World!"));
}

BOOST_AUTO_TEST_CASE(whole_body_larger_than_the_window_is_echoed) {
    test_server server({}, h2_policy());
    h2_test_client client(server.port());
    const std::string body = pattern(300 * 1024);
    const auto id = client.request("POST", "/echo", {}, body);
    BOOST_REQUIRE(client.pump_until_closed(id));
    BOOST_TEST(client.stream(id).status == 200);
    BOOST_TEST(client.stream(id).body == body);
}

BOOST_AUTO_TEST_CASE(streamed_body_windows_follow_the_handler_reads) {
    test_server server({}, h2_policy());
    h2_test_client client(server.port());
    const std::string body = pattern(400 * 1024);
    const auto id = client.request("POST", "/pull-echo?max=5000", {}, body);
    BOOST_REQUIRE(client.pump_until_closed(id));
    BOOST_TEST(client.stream(id).body == body);
    // Each pull got at most 5000 bytes: the window was granted as it read.
    BOOST_TEST(server.handler().pulls.load() >= static_cast<int>(body.size() / 5000));
}

BOOST_AUTO_TEST_CASE(a_handler_that_does_not_read_holds_the_client_at_one_window) {
    m0::http2::settings settings;
    settings.initial_window_size = 16384;
    test_server server({}, h2_policy(settings));
    h2_test_client client(server.port());
    // Until the server's SETTINGS arrive a client may send the protocol's
    // default window (64 KiB - 1); after them, the server's.
    BOOST_REQUIRE(client.pump([&] { return client.server_setting(4 /* INITIAL_WINDOW_SIZE */) == 16384; }));
    const auto id = client.request("POST", "/pull-wait-gone", {}, pattern(1024 * 1024));
    // The client sends until its window for the stream is spent, and no
    // further: m0 buffers at most one window of an unread upload.
    BOOST_REQUIRE(client.pump([&] { return client.stream(id).uploaded >= 16384 && client.upload_window(id) == 0; }));
    client.pump([] { return false; }, std::chrono::milliseconds(200));
    BOOST_TEST(client.stream(id).uploaded == 16384u);
    BOOST_TEST(client.upload_window(id) == 0);
    // A reset is the client going away: the handler hears of it.
    client.reset(id);
    BOOST_TEST(eventually([&] { return server.handler().gone_calls.load() == 1; }));
}

BOOST_AUTO_TEST_CASE(an_answer_before_the_body_stops_the_upload) {
    test_server server({}, h2_policy());
    h2_test_client client(server.port());
    const auto id = client.request("POST", "/pull-ignore", {}, pattern(1024 * 1024));
    BOOST_REQUIRE(client.pump_until_closed(id));
    BOOST_TEST(client.stream(id).status == 200);
    BOOST_TEST(client.stream(id).body == "ignored");
    BOOST_TEST(client.stream(id).uploaded < 1024u * 1024u);
    // The connection goes on.
    const auto next = client.request("GET", "/fixed");
    BOOST_REQUIRE(client.pump_until_closed(next));
    BOOST_TEST(client.stream(next).body == "Hello, World!");
}

BOOST_AUTO_TEST_CASE(reset_stream_is_client_gone) {
    test_server server({}, h2_policy());
    h2_test_client client(server.port());
    const auto id = client.request("GET", "/wait-gone");
    BOOST_REQUIRE(eventually([&] {
        client.pump([] { return false; }, std::chrono::milliseconds(10));
        return server.stats().in_flight.load() == 1;
    }));
    client.reset(id);
    BOOST_TEST(eventually([&] { return server.handler().gone_calls.load() == 1; }));
    const auto next = client.request("GET", "/fixed");
    BOOST_REQUIRE(client.pump_until_closed(next));
    BOOST_TEST(client.stream(next).status == 200);
}

BOOST_AUTO_TEST_CASE(running_handlers_never_exceed_the_stream_limit) {
    m0::http2::settings settings;
    settings.max_concurrent_streams = 2;
    test_server server({}, h2_policy(settings));
    h2_test_client client(server.port());
    // Two handlers that never answer; reset, their exchanges live on in
    // the handler (its on_client_gone callbacks hold them until they run).
    const auto a = client.request("GET", "/wait-gone");
    const auto b = client.request("GET", "/wait-gone");
    BOOST_REQUIRE(eventually([&] {
        client.pump([] { return false; }, std::chrono::milliseconds(10));
        return server.stats().in_flight.load() == 2;
    }));
    const auto c = client.request("GET", "/fixed");
    client.pump([] { return false; }, std::chrono::milliseconds(200));
    // The third waits: two handlers run, the limit is two.
    BOOST_TEST(!client.stream(c).closed);
    client.reset(a);
    BOOST_REQUIRE(client.pump_until_closed(c));
    BOOST_TEST(client.stream(c).body == "Hello, World!");
    client.reset(b);
    BOOST_TEST(eventually([&] { return server.handler().gone_calls.load() == 2; }));
}

BOOST_AUTO_TEST_CASE(drain_sends_goaway_and_lets_open_streams_finish) {
    test_server server({}, h2_policy());
    h2_test_client client(server.port());
    const auto id = client.request("GET", "/held");
    BOOST_REQUIRE(client.pump([&] { return client.stream(id).body == "tick;"; }));
    server.drain();
    BOOST_REQUIRE(client.pump_until_closed(id));
    BOOST_TEST(client.goaway());
    BOOST_TEST(client.goaway_code() == 0u);  // NO_ERROR
    BOOST_TEST(client.goaway_last_stream() == id);
    BOOST_TEST(client.stream(id).close_code == 0u);
    BOOST_TEST(client.stream(id).body == "tick;done");
}

BOOST_AUTO_TEST_CASE(file_responses_and_streamed_writes) {
    char path[] = "/tmp/m0-h2-file-XXXXXX";
    const int fd = ::mkstemp(path);
    BOOST_REQUIRE(fd >= 0);
    const std::string content = pattern(200 * 1024);
    BOOST_REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
    test_server server({}, h2_policy());
    server.handler().file_path = path;
    h2_test_client client(server.port());
    const auto file = client.request("GET", "/file");
    const auto chunked = client.request("GET", "/file-chunked");
    const auto late = client.request("GET", "/stream-late");
    BOOST_REQUIRE(client.pump([&] {
        return client.stream(file).closed && client.stream(chunked).closed && client.stream(late).closed;
    }));
    ::unlink(path);
    BOOST_TEST(client.stream(file).body == content);
    BOOST_TEST(client.stream(chunked).body == content);
    BOOST_TEST(client.stream(late).body == "chunk1chunk2chunk3");
}

BOOST_AUTO_TEST_CASE(stream_output_keeps_order_across_kinds) {
    char path[] = "/tmp/m0-h2-output-XXXXXX";
    const int fd = ::mkstemp(path);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::write(fd, "0123456789", 10) == 10);
    ::unlink(path);
    m0::http2::stream_output out;
    out.push(std::string("ab"));
    out.push_shared(std::make_shared<const std::string>("cd"));
    out.push_file(fd, 3, 4);  // "3456"; the queue owns and closes fd
    out.push(std::string("ef"));
    BOOST_TEST(out.pending() == 10u);
    std::uint8_t buf[16];
    std::string got;
    for (long n; (n = out.copy_into(buf, 3)) > 0;) got.append(reinterpret_cast<char*>(buf), static_cast<std::size_t>(n));
    BOOST_TEST(got == "abcd3456ef");
    BOOST_TEST(out.empty());
    BOOST_TEST(::fcntl(fd, F_GETFD) == -1);  // closed once sent
}
