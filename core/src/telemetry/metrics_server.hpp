#pragma once
// The metrics listener (`metrics.listen`): /metrics (Prometheus text format),
// /status.json, the live /status page and its /status/stream (Server-Sent
// Events, one status.json snapshot per second), summed over the metrics
// table. It runs on a thread of its own, never on a reactor, so a scrape
// costs the reactors nothing but the relaxed counter adds they make anyway.
// One poll loop over non-blocking sockets: a held stream never delays a
// scrape. Answers close their connection; a request has 2 s to arrive and an
// answer 10 s to leave; at most max_connections at a time; a stream whose
// reader falls 1 MiB behind is dropped. Streams end once the deployment
// drains.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>

namespace m0::telemetry {

class metrics_table;

class M0_INTERNAL_API metrics_server {
public:
    static constexpr std::chrono::seconds stream_interval{1};
    static constexpr std::size_t max_connections = 64;

    // Binds and listens at once (a busy address is a start-up error,
    // std::system_error); a port 0 is resolved into `address`.
    metrics_server(boost::asio::ip::tcp::endpoint& address, const metrics_table& table);
    ~metrics_server();  // stops the thread if started
    metrics_server(const metrics_server&) = delete;
    metrics_server& operator=(const metrics_server&) = delete;

    void start();
    // In a forked child: closes the sockets. The thread exists only in the
    // parent, so the child then leaks this object instead of destroying it.
    void forget_in_child() noexcept;
    // Around a fork() of the supervisor: the thread is parked in poll(), so
    // the child inherits no lock it held. Resume in parent and child.
    void pause_for_fork();
    void resume_after_fork();

private:
    struct connection;
    using clock = std::chrono::steady_clock;

    void run();
    void accept_all();
    void on_readable(connection& c);
    void on_writable(connection& c);
    void dispatch(connection& c);
    void tick_streams();

    const metrics_table& table_;
    int listen_fd_ = -1;
    int stop_fd_ = -1;  // eventfd: wakes the thread's poll to stop
    std::mutex fork_guard_;  // held by the thread except while it waits in poll()
    std::condition_variable running_;
    bool started_ = false;  // run() holds fork_guard_ (under it)
    std::thread thread_;
    std::vector<std::unique_ptr<connection>> connections_;  // the thread's own
    clock::time_point next_tick_{};
};

}  // namespace m0::telemetry
