#pragma once
// The engine on a worker of its own for tests: an io_context thread, a
// listener on 127.0.0.1:0 and a handler with a few routes.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <mutex>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/http.hpp>
#include <m0/reactor.hpp>

namespace m0::test {

// A per-worker listener over a plain acceptor.
class test_listener final : public m0::listener {
public:
    explicit test_listener(boost::asio::io_context& io);
    void async_accept(accept_handler handler) override;
    boost::asio::ip::tcp::endpoint local_endpoint() const override;
    void close();

private:
    boost::asio::ip::tcp::acceptor acceptor_;
};

// Routes:
//   /fixed            200 "Hello, World!"
//   /echo             200 with the request body
//   /inspect          "method|target|path|query|X-Test header"
//   /stream           chunks "chunk1" "chunk2" "chunk3" written inline
//   /stream-late      the same chunks, each from a later timer callback
//   /delay?ms=N       answers "late" from a timer N ms later
//   /file             write_file of file_path (length-delimited)
//   /file-chunked     write_file of file_path without a length
//   /borrowed         200 "borrowed body" via respond_borrowed from static data
//   /interim          respond() with 103 (a handler error)
//   /interim-begin    begin() with 102, then a chunk and end (a handler error)
//   /stream-blocking  writes "chunk1", then blocks the reactor until
//                     release_stream is set (at most 5 s), then "chunk2"
//   /hold             records stats->accepted, blocks the reactor until
//                     release_hold is set (at most 5 s), answers "held"
//   /wait-gone        never answers; counts on_client_gone callbacks
//   /wait-peer-eof    answers "peer eof after <body>" from its on_peer_eof
//                     callback; counts those and on_client_gone callbacks
//   /watch-peer-eof   registers a counted on_peer_eof, answers "watched" at once
//   /held             a chunked "tick;" held open; on drain writes "done"
//                     and ends
//   /drained-twice    begins a chunked response, waits with two
//                     when_drained waiters, then writes "2" and ends
//   /upgrade          101 with "Upgrade: echo", then echoes every byte; on
//                     drain writes "bye" and closes
// Streamed bodies (stream_body is true for paths starting with /pull):
//   /pull-echo?max=N  pulls the body N bytes at a time (default 4096), then
//                     answers with it; counts pulls, records the last error
//   /pull-ignore      answers "ignored" at once, never pulls
//   /pull-wait-gone   never pulls nor answers; counts on_client_gone callbacks
//   /pull-wait-peer-eof  pulls the whole body, then as /wait-peer-eof
//   anything else     404
class test_handler final : public m0::http::handler {
public:
    void on_request(m0::http::exchange_ptr ex) override;
    bool stream_body(const m0::http::request& req) override;

    std::string file_path;
    std::atomic<int> delayed_answers{0};
    std::atomic<bool> delayed_saw_gone{false};
    std::atomic<bool> release_stream{false};
    std::atomic<bool> stream_was_released{false};
    std::atomic<bool> release_hold{false};
    const m0::reactor_stats* stats = nullptr;
    // stats->accepted as each /hold request saw it on arrival.
    std::vector<std::uint64_t> hold_saw_accepted;
    std::mutex hold_mutex;
    std::atomic<int> pulls{0};
    std::atomic<int> gone_calls{0};
    std::atomic<int> peer_eof_calls{0};
    std::atomic<int> drained_calls{0};
    std::atomic<int> upgrade_drain_calls{0};
    // The error of the last failed pull (set on the worker thread).
    std::atomic<int> pull_error{0};
};

class test_server {
public:
    // policy: listeners' PROXY/TLS/HTTP/2 settings (null: plain HTTP/1.1).
    explicit test_server(m0::http_limits limits = {}, std::shared_ptr<const m0::http::client_policy> policy = nullptr);
    ~test_server();

    std::uint16_t port() const { return port_; }
    test_handler& handler() { return handler_; }
    m0::reactor_stats& stats() { return stats_; }
    // Runs fn on the worker thread and waits for it.
    void run_on_worker(std::function<void()> fn);
    void drain() { run_on_worker([this] { ctx_.run_drain_hooks(); }); }
    void force_close() { run_on_worker([this] { ctx_.run_force_close_hooks(); }); }

private:
    boost::asio::io_context io_{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    m0::http_limits limits_;
    std::shared_ptr<const m0::http::client_policy> policy_;
    m0::reactor_stats stats_;
    test_listener listener_;
    test_handler handler_;
    m0::reactor_context ctx_;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

// Polls pred until it holds or `limit` passes; a bound on liveness, not a
// timing assertion.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = std::chrono::seconds(5));

}  // namespace m0::test
