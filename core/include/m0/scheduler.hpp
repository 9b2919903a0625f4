#pragma once
// Scheduler seam: which threads run reactors, and which reactor serves each
// connection.
//
// A scheduler plugin (`scheduler.type` in YAML, one per serving process) owns
// the reactor threads and their io_contexts, the listening sockets (it binds
// them, or takes those a supervisor or systemd opened), accepting and placing
// each connection on a reactor, admission (accepting pauses at
// http.max_connections_per_reactor), core pinning, the stop flag, the drain
// with its per-reactor reports, and crash accounting. What a connection
// speaks is not its business: it hands the frontend a reactor_context per
// reactor whose listeners deliver the connections placed there, and runs the
// reactor's loop with m0::run_reactor_pass (m0/reactor_pass.hpp), so that
// every executor works under every scheduler.
//
// Lifecycle in a serving process: the plugin's factory builds one
// m0::scheduler from its config section (validating it, before anything
// starts, also for --check); the core then asks it for the socket layout a
// supervisor must open (prefork, reloads), and, in each serving process, for
// a reactor_set that it starts, drains and destroys.
#include <atomic>
#include <cstddef>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/http_limits.hpp>
#include <m0/reactor.hpp>

namespace m0 {

// Reactors and listening sockets a process may have.
inline constexpr unsigned max_reactors = 256;

// How one serving process's listening sockets are made, per address:
//  * reuseport: `reuseport_sockets` SO_REUSEPORT sockets of its own (the
//    kernel hashes connections across every process's sockets);
//  * shared: one socket, shared by every process of the deployment.
enum class listener_strategy { reuseport, shared };

struct socket_layout {
    listener_strategy strategy = listener_strategy::reuseport;
    unsigned reuseport_sockets = 1;  // per process and address (reuseport only)
    bool operator==(const socket_layout&) const = default;
};

// "2 reuseport sockets per process" / "one shared socket": for messages.
M0_API std::string to_string(const socket_layout& layout);

// Reads M0_REUSEPORT_WORKERS=0 (→ shared) over the configured strategy: the
// control arm of measurements that compare the two.
M0_API listener_strategy effective_listener_strategy(listener_strategy configured);

// One reactor's entry in a deployment_load table, a cache line of its own:
// written by that reactor's listener only, read by every process's.
struct alignas(64) reactor_load {
    static constexpr std::uint64_t absent = ~std::uint64_t{0};
    // Its open connections as its listener last saw them; absent while it
    // takes none (not started yet, draining, gone).
    std::atomic<std::uint64_t> live{absent};
    // Its listener waits for a connection now: it takes what arrives.
    std::atomic<bool> waiting{false};
    // The process whose entry it is: a process that takes over a row (a
    // replacement serves before its predecessor drains) claims it, and the
    // predecessor then leaves it alone.
    std::atomic<std::int32_t> owner{0};
    // An eventfd (nonblocking, close-on-exec) that wakes this entry's
    // listener: made with the table before the first fork, so it has the
    // same number in every serving process. A listener that leaves a queued
    // connection to this one writes it; the kernel woke only the listener
    // that sits out, and nothing else arrives to wake this one. -1: none.
    std::int32_t wake_fd = -1;
};

// The reactors of every serving process of a prefork deployment
// (server.workers > 1), in memory the processes share (the core maps it
// before the first fork): what lets a scheduler whose processes share a
// listener see whether its reactors hold more than their share, beyond its
// own process. `table` holds `processes` rows of `reactors` entries; `row`
// is this process's. Null table: one process, or a process without a row
// (one that SIGTTIN added beyond server.workers). A listener writes its
// entry only while `owner` is its process.
struct deployment_load {
    reactor_load* table = nullptr;
    unsigned processes = 0;
    unsigned reactors = 0;
    unsigned row = 0;
    reactor_load* entry(unsigned process, unsigned reactor) const noexcept {
        return table + static_cast<std::size_t>(process) * reactors + reactor;
    }
};

// The core's part of one reactor: where its counters live (a slot of the
// metrics table) and its access log and metrics recorder. Made by the core
// for each reactor on that reactor's io_context before the reactor starts.
class reactor_telemetry {
public:
    virtual ~reactor_telemetry() = default;
    virtual reactor_stats* stats() noexcept = 0;        // null: the scheduler keeps its own
    virtual request_recorder* recorder() noexcept = 0;  // null: no access log, no metrics
    // On the reactor's thread, once its loop is over and before its
    // io_context is destroyed: buffered log lines go out, timers are dropped.
    virtual void loop_ended() noexcept = 0;
};

// What the core gives a scheduler to serve one process with.
struct scheduler_options {
    unsigned reactors = 1;  // 1..max_reactors (server.threads)
    bool pin_cores = true;  // server.pin_cores
    // Reactor i is pinned to core (first_core + i) mod CPUs: the processes of
    // one deployment each start at their own offset instead of sharing core 0.
    unsigned first_core = 0;
    std::vector<boost::asio::ip::tcp::endpoint> addresses;  // server.listen, in order
    int backlog = 4096;
    http_limits limits;
    service_registry* services = nullptr;  // handed to every reactor_context
    // PROXY protocol listeners (in `addresses` order) and trusted forwarding
    // proxies, handed to every reactor_context as client_policy; null: the
    // socket's peer is the client.
    std::shared_ptr<const http::client_policy> clients;
    // Refuse an address another socket already listens on before binding
    // (m0::check_no_other_listener). Off in a supervised process: its
    // supervisor checked before forking, and sibling processes listen there.
    bool check_addresses = true;
    // Listening sockets someone else opened (a supervisor, systemd), laid out
    // as socket_layout() asked, taken over by the scheduler, which closes them
    // when it is done: `shared_fds` one per address (also what systemd
    // passes, whatever the layout), or `reactor_fds[socket][address]`, the
    // process's reuseport sockets. Empty: the scheduler binds its own.
    std::vector<int> shared_fds;
    std::vector<std::vector<int>> reactor_fds;
    // Every serving process's reactors (see deployment_load); this process's
    // row starts absent.
    deployment_load load;
    // Per reactor, when set: the core's counters and recorder.
    std::function<std::unique_ptr<reactor_telemetry>(unsigned reactor, boost::asio::io_context& io)> telemetry;
};

// What one reactor did during a drain.
struct reactor_report {
    unsigned index = 0;
    std::uint64_t connections_at_drain = 0;  // open when the drain began
    std::uint64_t drained = 0;               // of those, closed gracefully
    std::uint64_t force_closed = 0;          // closed at the deadline
    std::uint64_t in_flight_at_deadline = 0; // requests still running at the deadline
    std::uint64_t jobs_abandoned = 0;        // executor jobs still running when the reactor left
    std::uint64_t accepted = 0;
    std::uint64_t requests = 0;
    bool timed_out = false;  // the deadline came before the reactor was idle
    bool crashed = false;
    bool detached = false;   // did not return in time; its state was leaked, not freed
    std::string error;       // why it crashed
};

// The reactors of one serving process, as a scheduler runs them.
class reactor_set {
public:
    virtual ~reactor_set() = default;
    // Opens (or takes) the listeners and starts every reactor; returns once
    // each has run the frontend's start_reactor. Throws on an error (an
    // address in use, a frontend that cannot start), with every reactor it
    // started stopped and joined.
    virtual void start() = 0;
    // Stop accepting, let requests in flight finish, force-close what is left
    // at the deadline, join. timeout <= 0 is a hard stop. Idempotent: a
    // second call returns the first call's reports.
    virtual std::vector<reactor_report> drain(std::chrono::milliseconds timeout) = 0;
    // Hard stop, also from another thread while drain() waits. Idempotent.
    virtual void shutdown() = 0;

    virtual unsigned reactor_count() const = 0;
    virtual unsigned crashed_reactor_count() const = 0;
    virtual bool is_running(unsigned reactor) const = 0;
    virtual const reactor_stats& stats(unsigned reactor) const = 0;
    // The addresses actually bound (port 0 resolved), one per configured address.
    virtual std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const = 0;
};

// A scheduler plugin's object: built once per deployment from its config
// section, before any fork.
class scheduler {
public:
    virtual ~scheduler() = default;
    virtual const char* name() const noexcept = 0;
    // The listening sockets of one serving process with `reactors` reactors,
    // so that a supervisor can open them before the process exists, and keep
    // them across reloads (a reload that would change them is refused).
    virtual socket_layout sockets(unsigned reactors) const = 0;
    // The reactors of one serving process (not started). `executors`: every
    // executor of the deployment, in its order; each reactor gets a lane of
    // each (reactor_context::executor_lanes) and its loop serves them all.
    // Throws std::invalid_argument for reactors outside 1..max_reactors or
    // no executor or address.
    virtual std::unique_ptr<reactor_set> make_reactors(frontend& fe, std::vector<executor*> executors,
                                                       scheduler_options options) = 0;
};

}  // namespace m0
