#pragma once
// What the scheduler (m0/scheduler.hpp) hands a frontend on each reactor thread.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/http_limits.hpp>

namespace m0 {

// Where a reactor's connections come from, one per listen address (in
// server.listen order). Hides how the scheduler places connections (a
// per-reactor SO_REUSEPORT socket, one shared socket, or sockets another
// thread accepted and handed to this reactor). Owned by the scheduler: a
// frontend never closes it.
class listener {
public:
    using accept_handler = std::function<void(boost::system::error_code, boost::asio::ip::tcp::socket)>;
    virtual ~listener() = default;
    // One accept at a time; the handler runs on the reactor's io_context.
    // Once the reactor drains it hands over what it still holds for this
    // reactor (connections already taken, whose clients are sending here),
    // then fails with operation_aborted: an engine keeps accepting while it
    // drains until that error. The socket is close-on-exec (accept4 with
    // SOCK_CLOEXEC, or FD_CLOEXEC set after).
    virtual void async_accept(accept_handler handler) = 0;
    // The address listened on; when it is not a wildcard, the engine takes
    // it as every accepted connection's local address.
    virtual boost::asio::ip::tcp::endpoint local_endpoint() const = 0;
};

// Counters a reactor publishes; written by its own thread, read by anyone.
struct reactor_stats {
    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> requests{0};          // responses completed
    std::atomic<std::uint64_t> live_connections{0};
    // Connections accepted and closed since the reactor started (a slot of
    // the metrics table keeps counting across the processes that use it).
    // Incremented sequentially consistent: a scheduler that places
    // connections reads it to know a reactor's load (scheduler-balanced).
    std::atomic<std::uint64_t> closed{0};
    std::atomic<std::uint64_t> in_flight{0};         // requests read, response not finished
    std::atomic<std::uint64_t> force_closed{0};      // connections closed at a drain deadline
    // Jobs of this reactor's executor lanes not completed yet (queued or
    // running); published each loop pass only when metrics are on.
    std::atomic<std::uint64_t> executor_jobs{0};
};

// Runs work on one reactor thread from any thread. Outlives the
// reactor: once its loop has ended, post() drops the work and returns false,
// so a plugin thread (a bus subscriber, say) never touches a freed reactor.
class reactor_handle {
public:
    virtual ~reactor_handle() = default;
    virtual bool post(std::function<void()> fn) = 0;
    virtual unsigned reactor_index() const noexcept = 0;
};

class service_registry;
class request_recorder;
class deadline_watch;

namespace http {
class handler;
struct client_policy;
}

// One mount of a deployment that serves several frontends by path prefix
// (`mounts:`), as a reactor sees it. When a frontend's reactor_context carries
// one, http::serve() registers the frontend's handler here instead of
// starting a server: the core runs one server per reactor and routes each
// request to the mount with the longest matching prefix.
class mount_binding {
public:
    virtual ~mount_binding() = default;
    // Once per reactor. `h` must outlive the reactor loop.
    virtual void bind(http::handler& h) = 0;
};

struct reactor_context {
    unsigned index = 0;
    unsigned reactor_count = 1;
    boost::asio::io_context* io = nullptr;
    std::vector<listener*> listeners;
    // Set (release) by the stopper; reactors read it (acquire) every pass.
    const std::atomic<bool>* stop_flag = nullptr;
    // This frontend's executor lane on this reactor.
    executor_lane* lane = nullptr;
    // Every executor's lane on this reactor, in the deployment's executor
    // order (one entry unless `executors:` or `mounts:` name several).
    std::vector<executor_lane*> executor_lanes;
    // Set when this frontend is one mount of several (see mount_binding).
    mount_binding* mount = nullptr;
    // Request deadlines of this frontend's mount on this reactor
    // (m0/deadline.hpp); set by the core before start_reactor, null when
    // none is watched (server.request_timeout: 0 and no mount sets one).
    deadline_watch* deadlines = nullptr;
    reactor_stats* stats = nullptr;
    const http_limits* limits = nullptr;
    // Any-thread entry to this reactor's reactor.
    std::shared_ptr<reactor_handle> reactor;
    // Services plugins provide to each other (m0/services.hpp).
    service_registry* services = nullptr;
    // Core-private: the access log and metrics of this reactor, told of each
    // finished response by the HTTP engine; null when both are off.
    request_recorder* recorder = nullptr;
    // Core-private: PROXY protocol listeners and the trusted forwarding
    // proxies (server.forwarded_allow_ips); null: the socket's peer is the
    // client.
    const http::client_policy* client_policy = nullptr;

    // Drain hooks, added by frontends and modules in start_reactor and run by
    // the scheduler on this reactor's thread, in the order added. A drain
    // hook stops accepting, closes idle connections, and tells what is in
    // flight to finish (a held stream ends, a WebSocket says 1001); the
    // reactor then waits for connections to close. A force-close hook closes
    // everything left.
    void add_drain_hook(std::function<void()> fn) { drain_hooks_.push_back(std::move(fn)); }
    void add_force_close_hook(std::function<void()> fn) { force_close_hooks_.push_back(std::move(fn)); }
    void run_drain_hooks() {
        for (auto& h : drain_hooks_) h();
    }
    void run_force_close_hooks() {
        for (auto& h : force_close_hooks_) h();
    }
    // Appends this context's hooks to `to`'s and leaves this one without
    // any: the core hands a mount's hooks to its reactor's context.
    void move_hooks_to(reactor_context& to) {
        for (auto& h : drain_hooks_) to.drain_hooks_.push_back(std::move(h));
        for (auto& h : force_close_hooks_) to.force_close_hooks_.push_back(std::move(h));
        clear_hooks();
    }
    // Drops the hooks (and what they own) while the io_context still exists.
    void clear_hooks() {
        drain_hooks_.clear();
        force_close_hooks_.clear();
    }

private:
    std::vector<std::function<void()>> drain_hooks_;
    std::vector<std::function<void()>> force_close_hooks_;
};

}  // namespace m0
