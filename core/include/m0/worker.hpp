#pragma once
// What the scheduler hands a frontend on each worker (reactor) thread.
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/http_limits.hpp>

namespace m0 {

// A listening socket as one worker sees it. Hides the listener strategy
// (a per-worker SO_REUSEPORT socket, or one shared socket woken with
// EPOLLEXCLUSIVE). Owned by the scheduler: a frontend never closes it.
class listener {
public:
    using accept_handler = std::function<void(boost::system::error_code, boost::asio::ip::tcp::socket)>;
    virtual ~listener() = default;
    // One accept at a time; the handler runs on the worker's io_context.
    // Fails with operation_aborted once the worker drains.
    virtual void async_accept(accept_handler handler) = 0;
    virtual boost::asio::ip::tcp::endpoint local_endpoint() const = 0;
};

// Counters a worker publishes; written by its own thread, read by anyone.
struct worker_stats {
    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> requests{0};          // responses completed
    std::atomic<std::uint64_t> live_connections{0};
    std::atomic<std::uint64_t> in_flight{0};         // requests read, response not finished
    std::atomic<std::uint64_t> force_closed{0};      // connections closed at a drain deadline
};

struct worker_context {
    unsigned index = 0;
    unsigned worker_count = 1;
    boost::asio::io_context* io = nullptr;
    std::vector<listener*> listeners;
    // Set (release) by the stopper; workers read it (acquire) every pass.
    const std::atomic<bool>* stop_flag = nullptr;
    executor_lane* lane = nullptr;
    worker_stats* stats = nullptr;
    const http_limits* limits = nullptr;

    // Set by the frontend in start_worker; called by the scheduler on this
    // worker's thread. on_drain: stop accepting, close idle keep-alive
    // connections, let requests in flight finish (connections then close
    // after their response). on_force_close: close everything left.
    std::function<void()> on_drain;
    std::function<void()> on_force_close;
};

}  // namespace m0
