// Streamed request bodies, client-gone notifications, the half-close rule and
// the peer's FIN (on_peer_eof), several drain waiters, upgraded connections
// and the drain report.
#include <chrono>

#include <boost/test/unit_test.hpp>

#include <boost/asio/error.hpp>

#include "test_client.hpp"
#include "test_server.hpp"

using m0::test::eventually;
using m0::test::post;
using m0::test::test_client;
using m0::test::test_server;
using namespace std::chrono_literals;

namespace {

std::string chunked(const std::string& path, const std::vector<std::string>& chunks) {
    std::string out = "POST " + path + " HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (const auto& c : chunks) {
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", c.size());
        out += size + c + "\r\n";
    }
    return out + "0\r\n\r\n";
}

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
    return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http_streaming)

BOOST_AUTO_TEST_CASE(content_length_body_is_pulled_in_bounded_pieces) {
    test_server srv;
    test_client c(srv.port());
    const auto body = pattern(100'000);
    c.send(post("/pull-echo?max=1000", body));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->body == body);
    BOOST_TEST(srv.handler().pulls.load() >= 100);
    BOOST_TEST(srv.handler().pull_error.load() == 0);  // no piece above max
    // Keep-alive: the body was read to its end.
    c.send(post("/pull-echo", "again"));
    r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "again");
}

BOOST_AUTO_TEST_CASE(chunked_body_is_pulled_dechunked) {
    test_server srv;
    test_client c(srv.port());
    const std::vector<std::string> pieces{pattern(10), pattern(5000), pattern(1), pattern(70'000)};
    c.send(chunked("/pull-echo?max=3000", pieces));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == pieces[0] + pieces[1] + pieces[2] + pieces[3]);
    BOOST_TEST(srv.handler().pull_error.load() == 0);
}

BOOST_AUTO_TEST_CASE(continue_goes_out_on_the_first_pull_only) {
    test_server srv;
    {
        // The handler pulls: 100 Continue, then the body is read.
        test_client c(srv.port());
        c.send("POST /pull-echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
        auto interim = c.read_response();
        BOOST_REQUIRE(interim);
        BOOST_TEST(interim->status == 100);
        c.send("hello");
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->body == "hello");
    }
    {
        // The handler answers without pulling: no 100, and the connection
        // closes after the answer (the body may never come).
        test_client c(srv.port());
        c.send("POST /pull-ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->status == 200);
        BOOST_TEST(r->body == "ignored");
        BOOST_TEST(r->get("connection") == "close");
        BOOST_TEST(c.closed_by_peer());
    }
}

BOOST_AUTO_TEST_CASE(small_unread_body_is_skipped_and_the_connection_kept) {
    test_server srv;
    test_client c(srv.port());
    c.send(post("/pull-ignore", pattern(20'000)) + "GET /fixed HTTP/1.1\r\nHost: t\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "ignored");
    BOOST_TEST(!r->has("connection"));
    r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "Hello, World!");
}

BOOST_AUTO_TEST_CASE(large_unread_body_closes_after_an_intact_response) {
    test_server srv;
    test_client c(srv.port());
    // Announces 100 MB, sends 1 MB of it: the response must still arrive
    // whole, then the connection closes.
    c.send("POST /pull-ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->body == "ignored");
    BOOST_TEST(r->get("connection") == "close");
    try {
        c.send(pattern(1'000'000));
    } catch (const std::exception&) {
        // The server may already have closed: that is the point.
    }
    BOOST_TEST(c.closed_by_peer());
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
}

BOOST_AUTO_TEST_CASE(unread_chunked_body_over_the_bound_closes) {
    test_server srv;
    test_client c(srv.port());
    c.send(chunked("/pull-ignore", {pattern(600'000)}) + "GET /fixed HTTP/1.1\r\nHost: t\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "ignored");
    BOOST_TEST(c.closed_by_peer());  // the pipelined GET is not answered
}

BOOST_AUTO_TEST_CASE(body_over_the_limit_mid_stream_gets_413) {
    m0::http_limits limits;
    limits.max_body_size = 1000;
    test_server srv(limits);
    test_client c(srv.port());
    c.send(chunked("/pull-echo?max=100", {pattern(600), pattern(600)}));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 413);
    BOOST_TEST(c.closed_by_peer());
    BOOST_TEST(eventually([&] { return srv.handler().pull_error.load() == int(boost::asio::error::message_size); }));
    BOOST_TEST(eventually([&] { return srv.stats().in_flight.load() == 0; }));
}

BOOST_AUTO_TEST_CASE(body_timeout_applies_while_pulling) {
    m0::http_limits limits;
    limits.body_timeout = 200ms;
    test_server srv(limits);
    test_client c(srv.port());
    c.send("POST /pull-echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 408);
    BOOST_TEST(eventually([&] { return srv.handler().pull_error.load() == int(boost::asio::error::timed_out); }));
}

BOOST_AUTO_TEST_CASE(body_cut_short_by_the_client_is_answered_400) {
    // Content-Length promises 10 bytes; the client sends 3 and shuts down
    // its side. The request can never be complete: the engine answers 400
    // (the client still reads), whether the body is pulled by the handler
    // (the pull fails with eof) or read whole before it runs (it never
    // does). Either way this FIN is no on_peer_eof.
    test_server srv;
    for (const std::string path : {"/pull-wait-peer-eof", "/wait-peer-eof"}) {
        BOOST_TEST_CONTEXT(path) {
            test_client c(srv.port());
            c.send("POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
            c.shutdown_send();
            auto r = c.read_response();
            BOOST_REQUIRE(r);
            BOOST_TEST(r->status == 400);
            BOOST_TEST(r->get("connection") == "close");
            BOOST_TEST(c.closed_by_peer());
            BOOST_TEST(eventually([&] { return srv.stats().in_flight.load() == 0; }));
        }
    }
    // The streamed one's pull failed.
    BOOST_TEST(eventually([&] { return srv.handler().pull_error.load() == int(boost::asio::error::eof); }));
    BOOST_TEST(srv.handler().peer_eof_calls.load() == 0);
}

BOOST_AUTO_TEST_CASE(half_closed_client_gets_the_whole_response) {
    test_server srv;
    {
        test_client c(srv.port());
        c.send("GET /delay?ms=100 HTTP/1.1\r\nHost: t\r\n\r\n");
        c.shutdown_send();
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->body == "late");
        BOOST_TEST(!srv.handler().delayed_saw_gone.load());
        BOOST_TEST(c.closed_by_peer());
    }
    {
        test_client c(srv.port());
        c.send("GET /stream-late HTTP/1.1\r\nHost: t\r\n\r\n");
        c.shutdown_send();
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->body == "chunk1chunk2chunk3");
        BOOST_TEST(c.closed_by_peer());
    }
}

BOOST_AUTO_TEST_CASE(peer_eof_runs_once_on_a_fin_after_the_request_and_the_answer_still_arrives) {
    test_server srv;
    {
        test_client c(srv.port());
        c.send(post("/wait-peer-eof", "whole"));
        BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1; }));
        BOOST_TEST(srv.handler().peer_eof_calls.load() == 0);  // nothing before the FIN
        c.shutdown_send();
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->body == "peer eof after whole");
        BOOST_TEST(c.closed_by_peer());
        BOOST_TEST(srv.handler().peer_eof_calls.load() == 1);
        BOOST_TEST(srv.handler().gone_calls.load() == 0);  // half-closed is not gone
    }
    {
        // The FIN came with the request: a callback registered later runs at once.
        test_client c(srv.port());
        c.send(post("/wait-peer-eof", "early"));
        c.shutdown_send();
        auto r = c.read_response();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->body == "peer eof after early");
        BOOST_TEST(c.closed_by_peer());
        BOOST_TEST(srv.handler().peer_eof_calls.load() == 2);
    }
}

BOOST_AUTO_TEST_CASE(peer_eof_after_a_streamed_body_is_seen_while_the_handler_waits) {
    test_server srv;
    test_client c(srv.port());
    const auto body = pattern(20'000);
    c.send(post("/pull-wait-peer-eof", body));
    // Pulled to its end (4096 bytes a pull): the handler now waits for the FIN.
    BOOST_REQUIRE(eventually([&] { return srv.handler().pulls.load() == 5; }));
    BOOST_TEST(srv.handler().peer_eof_calls.load() == 0);
    c.shutdown_send();
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->body == "peer eof after " + body);
    BOOST_TEST(c.closed_by_peer());
    BOOST_TEST(srv.handler().peer_eof_calls.load() == 1);
    BOOST_TEST(srv.handler().pull_error.load() == 0);
}

BOOST_AUTO_TEST_CASE(peer_eof_does_not_run_for_a_fin_between_requests) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /watch-peer-eof HTTP/1.1\r\nHost: t\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "watched");
    BOOST_TEST(!r->has("connection"));  // kept alive: the FIN comes while idle
    c.shutdown_send();
    BOOST_TEST(c.closed_by_peer());
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
    BOOST_TEST(srv.handler().peer_eof_calls.load() == 0);
}

BOOST_AUTO_TEST_CASE(client_gone_runs_once_on_a_reset) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /wait-gone HTTP/1.1\r\nHost: t\r\n\r\n");
    BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1; }));
    c.reset();
    BOOST_TEST(eventually([&] { return srv.handler().gone_calls.load() == 1; }));
    BOOST_TEST(eventually([&] { return srv.stats().in_flight.load() == 0; }));
    BOOST_TEST(srv.handler().gone_calls.load() == 1);
}

BOOST_AUTO_TEST_CASE(client_gone_is_noticed_while_a_streamed_body_is_not_pulled) {
    test_server srv;
    test_client c(srv.port());
    c.send(post("/pull-wait-gone", pattern(100)).substr(0, 80));  // head and part of the body
    BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1; }));
    c.reset();
    BOOST_TEST(eventually([&] { return srv.handler().gone_calls.load() == 1; }));
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
}

BOOST_AUTO_TEST_CASE(client_gone_is_noticed_with_a_full_read_ahead_buffer) {
    test_server srv;
    test_client c(srv.port());
    std::string pipelined = "GET /wait-gone HTTP/1.1\r\nHost: t\r\n\r\n";
    while (pipelined.size() < 64 * 1024) pipelined += "GET /fixed HTTP/1.1\r\nHost: t\r\n\r\n";
    c.send(pipelined);
    BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1; }));
    c.reset();
    BOOST_TEST(eventually([&] { return srv.handler().gone_calls.load() == 1; }));
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
}

BOOST_AUTO_TEST_CASE(drain_tells_a_held_response_to_end) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n");
    BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 1; }));
    srv.drain();
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "tick;done");
    BOOST_TEST(c.closed_by_peer());
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
    BOOST_TEST(srv.stats().force_closed.load() == 0u);
}

BOOST_AUTO_TEST_CASE(several_drain_waiters_all_run) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /drained-twice HTTP/1.1\r\nHost: t\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "12");
    BOOST_TEST(srv.handler().drained_calls.load() == 2);
}

BOOST_AUTO_TEST_CASE(connection_close_response_written_in_full_is_not_force_closed) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /fixed HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->get("connection") == "close");
    BOOST_REQUIRE(eventually([&] { return srv.stats().in_flight.load() == 0; }));
    srv.drain();
    srv.force_close();
    BOOST_TEST(srv.stats().force_closed.load() == 0u);
    BOOST_TEST(srv.stats().live_connections.load() == 0u);
}

// The client said its request was its last and sent nothing more: the server
// closes as soon as the response is out (a FIN after it, never a reset),
// without waiting for the client, which still holds its socket open.
BOOST_AUTO_TEST_CASE(a_clients_last_request_is_closed_at_once_with_a_fin) {
    test_server srv;
    for (const char* last : {"GET /fixed HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                             "GET /fixed HTTP/1.0\r\n\r\n"}) {
        test_client c(srv.port());
        c.send(last);
        auto r = c.read_response();
        const auto answered = std::chrono::steady_clock::now();
        BOOST_REQUIRE(r);
        BOOST_TEST(r->body == "Hello, World!");
        BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
        // Not after a linger: that would end only when its 2 s bound ran out.
        const auto waited = std::chrono::steady_clock::now() - answered;
        BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() < 2000);
        char byte;
        BOOST_TEST(::recv(c.fd(), &byte, 1, 0) == 0);  // end of stream, not ECONNRESET
    }
    BOOST_TEST(srv.stats().force_closed.load() == 0u);
}

// Closing for its own reasons (here the connection's last allowed request),
// the server half-closes and lingers: the client, which asked to keep the
// connection, may already be sending its next request, and that must not
// turn the close into a reset that destroys the response.
BOOST_AUTO_TEST_CASE(a_server_side_close_lingers_until_the_client_closes) {
    m0::http_limits limits;
    limits.max_requests_per_connection = 1;
    test_server srv(limits);
    test_client c(srv.port());
    c.send("GET /fixed HTTP/1.1\r\nHost: t\r\n\r\n");
    auto r = c.read_response();
    const auto answered = std::chrono::steady_clock::now();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->get("connection") == "close");
    c.send("GET /fixed HTTP/1.1\r\nHost: t\r\n\r\n");  // too late: read and dropped
    BOOST_TEST(c.closed_by_peer());
    char byte;
    BOOST_TEST(::recv(c.fd(), &byte, 1, 0) == 0);
    // Still open, reading what the client sends, for up to 2 s (the linger's
    // bound): asserted only if this thread got here well within it.
    const auto live = srv.stats().live_connections.load();
    if (std::chrono::steady_clock::now() - answered < std::chrono::milliseconds(1500)) BOOST_TEST(live == 1u);
    c.close();
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
}

BOOST_AUTO_TEST_CASE(upgraded_connection_echoes_bytes_sent_with_and_after_the_head) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /upgrade HTTP/1.1\r\nHost: t\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\nearly");
    auto r = c.read_response(true);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 101);
    BOOST_TEST(r->get("upgrade") == "echo");
    BOOST_TEST(r->get("connection") == "upgrade");
    BOOST_TEST(c.read_exact(5) == "early");
    c.send("later bytes");
    BOOST_TEST(c.read_exact(11) == "later bytes");
    // Counted as a live connection, with nothing in flight.
    BOOST_TEST(srv.stats().live_connections.load() == 1u);
    BOOST_TEST(srv.stats().in_flight.load() == 0u);
    // Drain tells the stream's owner to finish: it says bye and closes.
    srv.drain();
    BOOST_TEST(c.read_exact(3) == "bye");
    BOOST_TEST(c.closed_by_peer());
    BOOST_TEST(srv.handler().upgrade_drain_calls.load() == 1);
    BOOST_TEST(eventually([&] { return srv.stats().live_connections.load() == 0; }));
}

BOOST_AUTO_TEST_CASE(force_close_closes_an_upgraded_connection) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /upgrade HTTP/1.1\r\nHost: t\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n");
    auto r = c.read_response(true);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 101);
    srv.force_close();
    BOOST_TEST(c.closed_by_peer());
    BOOST_TEST(srv.stats().force_closed.load() == 1u);
    BOOST_TEST(srv.stats().live_connections.load() == 0u);
}

BOOST_AUTO_TEST_CASE(http10_cannot_upgrade) {
    test_server srv;
    test_client c(srv.port());
    c.send("GET /upgrade HTTP/1.0\r\nUpgrade: echo\r\n\r\n");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 400);
}

BOOST_AUTO_TEST_SUITE_END()
