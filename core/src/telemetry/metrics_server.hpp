#pragma once
// The metrics listener (`metrics.listen`): /metrics (Prometheus text format)
// and /status.json, summed over the metrics table. It runs on a thread of its
// own, never on a reactor, so a scrape costs the reactors nothing but the
// relaxed counter adds they make anyway. One connection at a time, each
// closed after its answer, with short socket timeouts: a scraper, not the
// public, talks to it.
#include <atomic>
#include <thread>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>

namespace m0::telemetry {

class metrics_table;

class M0_INTERNAL_API metrics_server {
public:
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

private:
    void run();
    void serve_one(int fd);

    const metrics_table& table_;
    int listen_fd_ = -1;
    int stop_fd_ = -1;  // eventfd: wakes the thread's poll to stop
    std::thread thread_;
};

}  // namespace m0::telemetry
