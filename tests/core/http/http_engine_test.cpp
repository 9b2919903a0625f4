#define BOOST_TEST_MODULE http_engine_test
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "test_client.hpp"
#include "test_server.hpp"

using m0::test::accept_backlog;
using m0::test::eventually;
using m0::test::post;
using m0::test::test_client;
using m0::test::test_server;
using namespace std::chrono_literals;

namespace {

std::string get(const std::string& path, const std::string& extra = "") {
    return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http_engine)

BOOST_AUTO_TEST_CASE(keep_alive_reuses_the_connection) {
    test_server srv;
    test_client c(srv.port());
    for (int i = 0; i < 3; ++i) {
        c.send(get("/fixed"));
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->status == 200);
        BOOST_TEST(r->body == "Hello, World!");
        BOOST_TEST(r->get("content-length") == "13");
        BOOST_TEST(!r->has("connection"));
    }
    BOOST_TEST(srv.stats().accepted.load() == 1u);
    BOOST_TEST(eventually([&] { return srv.stats().requests.load() == 3; }));
}

BOOST_AUTO_TEST_CASE(date_and_server_headers_are_present) {
    test_server srv;
    test_client c(srv.port());
    c.send(get("/fixed"));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->get("server") == "m0");
    const auto date = r->get("date");
    BOOST_TEST(date.size() == 29u);  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    BOOST_TEST(date.substr(25) == " GMT");
    BOOST_TEST(r->get("content-type") == "text/plain");
}

BOOST_AUTO_TEST_CASE(three_pipelined_requests_are_answered_in_order) {
    test_server srv;
    test_client c(srv.port());
    // The slow one first: the fast ones must wait behind it.
    c.send(get("/delay?ms=50") + post("/echo", "two") + post("/echo", "three"));
    auto r1 = c.read_response();
    auto r2 = c.read_response();
    auto r3 = c.read_response();
    BOOST_REQUIRE(r1 && r2 && r3);
    BOOST_TEST(r1->body == "late");
    BOOST_TEST(r2->body == "two");
    BOOST_TEST(r3->body == "three");
}

BOOST_AUTO_TEST_CASE(chunked_upload_is_delivered_dechunked) {
    test_server srv;
    test_client c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
           "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nTrailer-Field: ignored\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->body == "Wikipedia");
    // The connection is still in sync after the trailer.
    c.send(get("/fixed"));
    auto r2 = c.read_response();
    BOOST_REQUIRE(r2);
    BOOST_TEST(r2->body == "Hello, World!");
}

BOOST_AUTO_TEST_CASE(request_fields_are_parsed) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /inspect/a%20b?x=1&y=2 HTTP/1.1\r\nHost: t\r\nX-TEST: value one\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "GET|/inspect/a%20b?x=1&y=2|/inspect/a%20b|x=1&y=2|value one");
}

BOOST_AUTO_TEST_CASE(unknown_path_answers_404_and_keeps_alive) {
    test_server srv;
    test_client c(srv.port());
    c.send(get("/nope") + get("/fixed"));
    auto r1 = c.read_response();
    auto r2 = c.read_response();
    BOOST_REQUIRE(r1 && r2);
    BOOST_TEST(r1->status == 404);
    BOOST_TEST(r2->status == 200);
}

BOOST_AUTO_TEST_CASE(head_has_content_length_but_no_body) {
    test_server srv;
    test_client c(srv.port());
    c.send("HEAD /fixed HTTP/1.1\r\nHost: t\r\n\r\n");
    auto r = c.read_response(true);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->get("content-length") == "13");
    // A body byte sent for HEAD would corrupt this next response.
    c.send(get("/echo"));
    auto r2 = c.read_response();
    BOOST_REQUIRE(r2);
    BOOST_TEST(r2->status == 200);
    BOOST_TEST(r2->body.empty());
    // Streamed HEAD: no chunked framing, no body.
    c.send("HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n" + get("/fixed"));
    auto r3 = c.read_response(true);
    auto r4 = c.read_response();
    BOOST_REQUIRE(r3 && r4);
    BOOST_TEST(!r3->has("transfer-encoding"));
    BOOST_TEST(r4->body == "Hello, World!");
}

BOOST_AUTO_TEST_CASE(http10_closes_by_default) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /fixed HTTP/1.0\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "Hello, World!");
    BOOST_TEST(r->get("connection") == "close");
    BOOST_TEST(c.closed_by_peer());
}

BOOST_AUTO_TEST_CASE(http10_keep_alive_when_asked) {
    test_server srv;
    test_client c(srv.port());
    for (int i = 0; i < 2; ++i) {
        c.send("GET /fixed HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->get("connection") == "keep-alive");
        BOOST_TEST(r->body == "Hello, World!");
    }
    // A streamed answer of unknown length on HTTP/1.0 is close-delimited.
    c.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(!r->has("transfer-encoding"));
    BOOST_TEST(r->get("connection") == "close");
    BOOST_TEST(r->body == "chunk1chunk2chunk3");
}

BOOST_AUTO_TEST_CASE(connection_close_is_honoured) {
    test_server srv;
    test_client c(srv.port());
    c.send(get("/fixed", "Connection: close\r\n") + get("/fixed"));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->get("connection") == "close");
    // The second, pipelined request is not answered.
    BOOST_TEST(c.closed_by_peer());
}

BOOST_AUTO_TEST_CASE(expect_100_continue_is_answered_before_the_body) {
    test_server srv;
    test_client c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    BOOST_TEST(c.read_exact(25) == "HTTP/1.1 100 Continue\r\n\r\n");
    c.send("hello");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->body == "hello");
}

BOOST_AUTO_TEST_CASE(body_over_the_limit_gets_413_without_being_read) {
    m0::http_limits limits;
    limits.max_body_size = 1024;
    test_server srv(limits);
    test_client c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 413);  // and not a 100 first
    BOOST_TEST(r->get("connection") == "close");
    BOOST_TEST(c.closed_by_peer());

    test_client chunked(srv.port());
    chunked.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" + std::string(2048, 'x') +
                 "\r\n0\r\n\r\n");
    auto r2 = chunked.read_response();
    BOOST_REQUIRE(r2);
    BOOST_TEST(r2->status == 413);
}

BOOST_AUTO_TEST_CASE(malformed_requests_get_400_and_close) {
    test_server srv;
    for (const std::string& bad : {
             std::string("GARBAGE\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n"),
             std::string("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
             std::string("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
             std::string("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
             std::string("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n"),
             std::string("GET / HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n b\r\n\r\n"),
         }) {
        BOOST_TEST_CONTEXT(bad) {
            test_client c(srv.port());
            c.send(bad);
            auto r = c.read_response();
            BOOST_REQUIRE(r);
            BOOST_TEST(r->status == 400);
            BOOST_TEST(r->get("connection") == "close");
            BOOST_TEST(c.closed_by_peer());
        }
    }
}

BOOST_AUTO_TEST_CASE(oversized_heads_get_414_and_431) {
    m0::http_limits limits;
    limits.max_request_line = 256;
    limits.max_header_bytes = 2048;
    limits.max_header_count = 10;
    test_server srv(limits);
    {
        test_client c(srv.port());
        c.send("GET /" + std::string(400, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n");
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->status == 414);
    }
    {
        test_client c(srv.port());
        c.send("GET /" + std::string(400, 'a'));  // no line end yet
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->status == 414);
    }
    {
        test_client c(srv.port());
        c.send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4000, 'b') + "\r\n\r\n");
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->status == 431);
    }
    {
        test_client c(srv.port());
        std::string many = "GET / HTTP/1.1\r\nHost: t\r\n";
        for (int i = 0; i < 20; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
        c.send(many + "\r\n");
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->status == 431);
        BOOST_TEST(c.closed_by_peer());
    }
}

BOOST_AUTO_TEST_CASE(streamed_response_is_chunked) {
    test_server srv;
    test_client c(srv.port());
    c.send(get("/stream") + get("/stream-late") + get("/fixed"));
    auto r1 = c.read_response();
    auto r2 = c.read_response();
    auto r3 = c.read_response();
    BOOST_REQUIRE(r1 && r2 && r3);
    BOOST_TEST(r1->get("transfer-encoding") == "chunked");
    BOOST_TEST(!r1->has("content-length"));
    BOOST_TEST(r1->body == "chunk1chunk2chunk3");
    BOOST_TEST(r2->body == "chunk1chunk2chunk3");
    BOOST_TEST(r3->body == "Hello, World!");
}

BOOST_AUTO_TEST_CASE(streamed_chunk_leaves_while_the_handler_still_runs) {
    test_server srv;
    test_client c(srv.port());
    c.send(get("/stream-blocking"));
    // The handler holds the reactor until the test has seen chunk1, so
    // chunk1 must have been written from inside on_request.
    std::string got;
    while (got.find("chunk1") == std::string::npos) {
        auto more = c.read_exact(1);
        if (more.empty()) break;
        got += more;
    }
    srv.handler().release_stream = true;
    BOOST_TEST(got.find("chunk1") != std::string::npos);
    while (got.size() < 5 || got.compare(got.size() - 5, 5, "0\r\n\r\n") != 0) {
        auto more = c.read_exact(1);
        if (more.empty()) break;
        got += more;
    }
    BOOST_TEST(got.find("chunk2") != std::string::npos);
    BOOST_TEST(srv.handler().stream_was_released.load());
}

BOOST_AUTO_TEST_CASE(interim_status_from_a_handler_becomes_500) {
    test_server srv;
    test_client c(srv.port());
    c.send(get("/interim") + get("/interim-begin") + get("/fixed"));
    auto r1 = c.read_response();
    auto r2 = c.read_response();
    auto r3 = c.read_response();
    BOOST_REQUIRE(r1 && r2 && r3);
    BOOST_TEST(r1->status == 500);
    BOOST_TEST(r1->get("content-length") == "0");
    BOOST_TEST(r2->status == 500);
    BOOST_TEST(r2->body.empty());
    BOOST_TEST(r3->status == 200);
    BOOST_TEST(r3->body == "Hello, World!");
}

BOOST_AUTO_TEST_CASE(borrowed_response_is_complete) {
    test_server srv;
    test_client c(srv.port());
    c.send(get("/borrowed") + "HEAD /borrowed HTTP/1.1\r\nHost: t\r\n\r\n" + get("/borrowed"));
    auto r1 = c.read_response();
    auto r2 = c.read_response(true);
    auto r3 = c.read_response();
    BOOST_REQUIRE(r1 && r2 && r3);
    BOOST_TEST(r1->status == 200);
    BOOST_TEST(r1->body == "borrowed body");
    BOOST_TEST(r1->get("content-length") == "13");
    BOOST_TEST(r1->get("x-route") == "borrowed");
    BOOST_TEST(r2->get("content-length") == "13");
    BOOST_TEST(r2->body.empty());
    BOOST_TEST(r3->body == "borrowed body");
}

BOOST_AUTO_TEST_CASE(write_file_sends_identical_bytes) {
    test_server srv;
    std::string path = (std::filesystem::temp_directory_path() / "m0-http-test-XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    BOOST_REQUIRE(fd >= 0);
    // Large enough to fill the socket buffer, so the EAGAIN path runs.
    std::string content(6 * 1024 * 1024 + 123, '\0');
    std::mt19937 rng(42);
    for (auto& ch : content) ch = static_cast<char>(rng());
    BOOST_REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
    srv.handler().file_path = path;

    test_client c(srv.port());
    c.send(get("/file") + get("/file-chunked") + "HEAD /file HTTP/1.1\r\nHost: t\r\n\r\n");
    std::this_thread::sleep_for(50ms);  // let the server hit a full socket buffer
    auto r1 = c.read_response();
    auto r2 = c.read_response();
    auto r3 = c.read_response(true);
    ::unlink(path.c_str());
    BOOST_REQUIRE(r1 && r2 && r3);
    BOOST_TEST(r1->get("content-length") == std::to_string(content.size()));
    BOOST_TEST((r1->body == content));
    BOOST_TEST(r2->get("transfer-encoding") == "chunked");
    BOOST_TEST((r2->body == content));
    BOOST_TEST(r3->get("content-length") == std::to_string(content.size()));
}

BOOST_AUTO_TEST_CASE(client_disconnect_during_a_delayed_answer) {
    test_server srv;
    {
        test_client c(srv.port());
        c.send(get("/delay?ms=200"));
        BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1; }));
        c.reset();  // gone while the handler holds the exchange (a mere FIN is a half-close)
    }
    BOOST_REQUIRE(eventually([&] { return srv.handler().delayed_answers.load() == 1; }));
    BOOST_TEST(srv.handler().delayed_saw_gone.load());
    BOOST_TEST(eventually([&] { return srv.stats().in_flight.load() == 0; }));
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
    // The worker still serves.
    test_client c2(srv.port());
    c2.send(get("/fixed"));
    auto r = c2.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
}

BOOST_AUTO_TEST_CASE(drain_closes_idle_and_finishes_in_flight) {
    test_server srv;
    test_client idle(srv.port());
    idle.send(get("/fixed"));
    BOOST_REQUIRE(idle.read_response());
    test_client fresh(srv.port());  // never sends a byte: closed after a short grace
    test_client busy(srv.port());
    busy.send(get("/delay?ms=200"));
    BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1 && srv.stats().live_connections == 3; }));

    srv.drain();
    BOOST_TEST(idle.closed_by_peer());
    BOOST_TEST(fresh.closed_by_peer());
    auto r = busy.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "late");
    BOOST_TEST(r->get("connection") == "close");
    BOOST_TEST(busy.closed_by_peer());
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
    BOOST_TEST(srv.stats().force_closed.load() == 0u);
    BOOST_TEST(srv.stats().requests.load() == 2u);
}

BOOST_AUTO_TEST_CASE(drain_answers_the_first_request_of_a_connection_accepted_before_it) {
    // Under load a drain always finds connections accepted whose request is
    // still on its way: closing them would fail requests a client already sent.
    test_server srv;
    test_client fresh(srv.port());
    BOOST_REQUIRE(eventually([&] { return srv.stats().live_connections.load() == 1; }));
    srv.drain();
    fresh.send(get("/fixed"));
    auto r = fresh.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->get("connection") == "close");
    BOOST_TEST(fresh.closed_by_peer());
    BOOST_TEST(srv.stats().requests.load() == 1u);
}

BOOST_AUTO_TEST_CASE(drain_answers_the_next_request_of_a_connection_in_use) {
    // A load generator sends its next request as soon as it has read a
    // response: a drain (a reload) that closed the connection in between
    // would cut that request. The drain waits for it instead, answers it
    // with Connection: close and then closes.
    test_server srv;
    test_client busy(srv.port());
    busy.send(get("/fixed"));
    BOOST_REQUIRE(busy.read_response());
    srv.drain();
    busy.send(get("/fixed"));
    auto r = busy.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->get("connection") == "close");
    BOOST_TEST(busy.closed_by_peer());
    BOOST_TEST(srv.stats().requests.load() == 2u);
    BOOST_TEST(srv.stats().force_closed.load() == 0u);
}

BOOST_AUTO_TEST_CASE(force_close_closes_everything_and_counts) {
    test_server srv;
    test_client a(srv.port());
    test_client b(srv.port());
    a.send(get("/fixed"));
    BOOST_REQUIRE(a.read_response());
    b.send(get("/delay?ms=300"));
    BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1 && srv.stats().live_connections == 2; }));
    srv.drain();
    srv.force_close();
    // a, between two requests, is closed without cutting anything; b is forced.
    BOOST_TEST(srv.stats().force_closed.load() == 1u);
    BOOST_TEST(b.closed_by_peer());
    BOOST_TEST(srv.stats().live_connections.load() == 0u);
    // The handler answers later into a closed connection: dropped, no crash.
    BOOST_REQUIRE(eventually([&] { return srv.handler().delayed_answers.load() == 1; }));
    BOOST_TEST(srv.handler().delayed_saw_gone.load());
    BOOST_TEST(eventually([&] { return srv.stats().in_flight.load() == 0; }));
}

BOOST_AUTO_TEST_CASE(timeouts_close_slow_and_idle_connections) {
    m0::http_limits limits;
    limits.header_timeout = 150ms;
    limits.keepalive_timeout = 150ms;
    test_server srv(limits);
    test_client slow(srv.port());
    slow.send("GET /fixed HTTP/1.1\r\nHost:");  // and nothing more
    auto r = slow.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 408);
    BOOST_TEST(slow.closed_by_peer());

    test_client idle(srv.port());
    idle.send(get("/fixed"));
    BOOST_REQUIRE(idle.read_response());
    BOOST_TEST(idle.closed_by_peer());  // after keepalive_timeout, without a response
}

BOOST_AUTO_TEST_CASE(max_requests_per_connection_closes_after_the_last) {
    m0::http_limits limits;
    limits.max_requests_per_connection = 2;
    test_server srv(limits);
    test_client c(srv.port());
    c.send(get("/fixed") + get("/fixed") + get("/fixed"));
    auto r1 = c.read_response();
    auto r2 = c.read_response();
    BOOST_REQUIRE(r1 && r2);
    BOOST_TEST(!r1->has("connection"));
    BOOST_TEST(r2->get("connection") == "close");
    BOOST_TEST(c.closed_by_peer());
}

BOOST_AUTO_TEST_CASE(connection_limit_pauses_accepting) {
    m0::http_limits limits;
    limits.max_connections_per_reactor = 1;
    test_server srv(limits);
    auto first = std::make_unique<test_client>(srv.port());
    first->send(get("/fixed"));
    BOOST_REQUIRE(first->read_response());
    test_client second(srv.port());  // waits in the kernel backlog
    second.send(get("/fixed"));
    BOOST_REQUIRE(eventually([&] { return accept_backlog(srv.port()) == 1; }));
    // The listener was readable before this request arrived: a reactor that
    // still accepted would have taken the queued connection by the time it
    // answers.
    first->send(get("/fixed"));
    BOOST_REQUIRE(first->read_response());
    BOOST_TEST(srv.stats().accepted.load() == 1u);
    BOOST_TEST(accept_backlog(srv.port()) == 1u);
    first.reset();
    auto r = second.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(srv.stats().accepted.load() == 2u);
}

BOOST_AUTO_TEST_CASE(busy_reactor_takes_every_queued_connection_at_once) {
    test_server srv;
    test_client first(srv.port());
    first.send(get("/hold"));
    BOOST_REQUIRE(eventually([&] {
        std::lock_guard lock(srv.handler().hold_mutex);
        return !srv.handler().hold_saw_accepted.empty();
    }));
    // The reactor is inside a handler: these wait in the kernel backlog.
    constexpr int queued = 5;
    std::vector<std::unique_ptr<test_client>> clients;
    for (int k = 0; k < queued; ++k) {
        clients.push_back(std::make_unique<test_client>(srv.port()));
        clients.back()->send(get("/hold"));
    }
    srv.handler().release_hold = true;
    BOOST_REQUIRE(first.read_response());
    for (auto& c : clients) {
        auto r = c->read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->body == "held");
    }
    // The first request dispatched after the long one already found every
    // queued connection accepted, not one per handler run.
    std::lock_guard lock(srv.handler().hold_mutex);
    const auto& saw = srv.handler().hold_saw_accepted;
    BOOST_REQUIRE(saw.size() == queued + 1u);
    BOOST_TEST(saw[0] == 1u);
    BOOST_TEST(saw[1] == queued + 1u);
}

BOOST_AUTO_TEST_CASE(ten_thousand_pipelined_requests_in_order) {
    test_server srv;
    constexpr int connections = 4;
    constexpr int per_connection = 2500;
    for (int k = 0; k < connections; ++k) {
        test_client c(srv.port());
        std::thread writer([&] {
            std::string batch;
            for (int i = 0; i < per_connection; ++i) {
                const auto body = std::to_string(k) + ":" + std::to_string(i);
                batch += i % 3 == 0 ? post("/echo", body) : get("/inspect?" + body);
                if (batch.size() > 16 * 1024 || i + 1 == per_connection) {
                    c.send(batch);
                    batch.clear();
                }
            }
        });
        int in_order = 0;
        for (int i = 0; i < per_connection; ++i) {
            auto r = c.read_response();
            if (!r) break;
            const auto body = std::to_string(k) + ":" + std::to_string(i);
            const auto expected = i % 3 == 0 ? body : "GET|/inspect?" + body + "|/inspect|" + body + "|-";
            if (r->status == 200 && r->body == expected)
                ++in_order;
            else
                BOOST_TEST_MESSAGE("response " << i << ": " << r->status << " " << r->body);
        }
        writer.join();
        BOOST_TEST(in_order == per_connection);
    }
    BOOST_TEST(eventually([&] { return srv.stats().requests.load() == connections * per_connection; }));
}

BOOST_AUTO_TEST_CASE(trailers_follow_the_last_chunk_of_a_chunked_response) {
    test_server srv;
    {
        test_client c(srv.port());
        c.send("GET /stream-trailers HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        const std::string raw = c.read_exact(1 << 16);
        const std::string tail = "6\r\nchunk1\r\n0\r\nx-sum: 42\r\nx-b: 2\r\n\r\n";
        BOOST_TEST(raw.size() > tail.size());
        BOOST_TEST(raw.substr(raw.size() - std::min(raw.size(), tail.size())) == tail);
    }
    {
        // HTTP/1.0: close-delimited, no place for trailers.
        test_client c(srv.port());
        c.send("GET /stream-trailers HTTP/1.0\r\n\r\n");
        const std::string raw = c.read_exact(1 << 16);
        BOOST_TEST(raw.substr(raw.size() - 6) == "chunk1");
        BOOST_TEST(raw.find("x-sum: 42") == std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()
