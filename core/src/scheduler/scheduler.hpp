#pragma once
// The multicore scheduler (docs/architecture.md): N worker threads, one
// io_context each, running a frontend's serving loop over the chosen
// listener strategy. Generic over m0::frontend; knows nothing about HTTP.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/http_limits.hpp>

namespace m0 {

enum class listener_strategy { reuseport, shared };

struct scheduler_options {
    unsigned workers = 1;                                   // 1..256
    listener_strategy listener = listener_strategy::reuseport;
    bool pin_cores = true;
    // Worker i is pinned to core (first_core + i) mod CPUs: processes of one
    // deployment each start at their own offset instead of sharing core 0.
    unsigned first_core = 0;
    std::vector<boost::asio::ip::tcp::endpoint> addresses;  // every worker listens on each
    http_limits limits;
    int backlog = 4096;
    service_registry* services = nullptr;  // handed to every reactor_context
    // Refuse an address another socket already listens on before binding
    // (check_no_other_listener). Off in a supervised process: its supervisor
    // checked before forking, and sibling processes already listen there.
    bool check_addresses = true;
    // Listening sockets opened by someone else (a supervisor, systemd),
    // taken over by the scheduler, which closes them at the end:
    // `shared_fds`, one per address, make the strategy `shared`;
    // `reactor_fds[reactor][address]` are each reactor's own (reuseport).
    // The addresses are then what the sockets are bound to; nothing is
    // checked or bound here.
    std::vector<int> shared_fds;
    std::vector<std::vector<int>> reactor_fds;
    // Per reactor, when set: where its reactor_stats live (a slot of the
    // metrics table), and its access log and metrics recorder.
    std::function<reactor_stats*(unsigned reactor)> stats_slot;
    std::function<std::unique_ptr<request_recorder>(unsigned reactor, boost::asio::io_context& io)> make_recorder;
    // PROXY protocol listeners (in `addresses` order) and trusted forwarding
    // proxies, handed to every reactor_context; null: the socket's peer.
    std::shared_ptr<const http::client_policy> clients;
};

// What one worker did during a drain.
struct worker_report {
    unsigned index = 0;
    std::uint64_t connections_at_drain = 0;  // open when the drain began
    std::uint64_t drained = 0;               // of those, closed gracefully
    std::uint64_t force_closed = 0;          // closed at the deadline
    std::uint64_t in_flight_at_deadline = 0; // requests still running at the deadline
    std::uint64_t jobs_abandoned = 0;        // executor jobs still running when the worker left
    std::uint64_t accepted = 0;
    std::uint64_t requests = 0;
    bool timed_out = false;  // the deadline came before the worker was idle
    bool crashed = false;
    bool detached = false;   // did not return in time; its state was leaked, not freed
    std::string error;       // why it crashed
};

// Reads M0_REUSEPORT_WORKERS=0 (→ shared) over the configured strategy.
M0_INTERNAL_API listener_strategy effective_listener_strategy(listener_strategy configured);

class M0_INTERNAL_API scheduler {
public:
    // Throws std::invalid_argument for workers outside 1..256, before any
    // thread starts.
    scheduler(frontend& fe, executor& ex, scheduler_options options);
    // Several executors (`executors:` / `mounts:`): each worker gets a lane of
    // every one (reactor_context::executor_lanes, `lane` is the first's) and
    // its loop polls them all. At least one.
    scheduler(frontend& fe, std::vector<executor*> executors, scheduler_options options);
    ~scheduler();
    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    // Opens listeners and starts the workers. On an error, workers already
    // started are stopped and joined before it is rethrown.
    void start();

    // Stop accepting, let requests in flight finish, force-close what is left
    // at the deadline, join. timeout <= 0 is a hard stop. Idempotent: a
    // second call returns the first call's reports.
    std::vector<worker_report> drain(std::chrono::milliseconds timeout);
    // Hard stop (also from another thread while drain() waits). Idempotent.
    void shutdown();

    unsigned reactor_count() const;
    unsigned crashed_worker_count() const;
    bool is_running(unsigned worker) const;
    const reactor_stats& stats(unsigned worker) const;
    // The addresses actually bound (port 0 resolved), one per configured address.
    std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;

private:
    struct worker;
    struct shared_state;
    void run_worker(worker& w);
    // Stops every reactor and joins it; one still running at grace_deadline
    // is detached (its resources leaked, never freed under it).
    void stop_and_join_all(std::chrono::steady_clock::time_point grace_deadline);

    frontend& frontend_;
    std::vector<executor*> executors_;
    scheduler_options options_;
    std::shared_ptr<shared_state> state_;
    std::vector<std::unique_ptr<worker>> workers_;
    std::vector<int> shared_fds_;
    std::vector<boost::asio::ip::tcp::endpoint> bound_;
    void raise_phase(int to);
    std::mutex drain_mutex_;  // held for the whole of drain()
    bool started_ = false;
    bool finished_ = false;
    std::vector<worker_report> reports_;
};

}  // namespace m0
