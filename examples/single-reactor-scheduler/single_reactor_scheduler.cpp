// `scheduler.type: single` — the smallest scheduler that keeps m0's scheduler
// contract (m0/scheduler.hpp), written from the SDK headers alone: one
// reactor thread that accepts on its own sockets, runs the frontend and the
// deployment's executor on one io_context, drains on request and reports.
// A model for plugin authors; m0's own schedulers (plugins/scheduler-*) add
// many reactors, core pinning, crash accounting and the bounded stop of a
// reactor held by application code.
#include <fcntl.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <m0/config.hpp>
#include <m0/listen_socket.hpp>
#include <m0/plugin.hpp>
#include <m0/reactor_pass.hpp>
#include <m0/scheduler.hpp>

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// One listening socket as the reactor sees it.
class acceptor_listener final : public m0::listener {
public:
    acceptor_listener(asio::io_context& io, int fd) : acceptor_(io, m0::socket_protocol(fd), fd) {}
    void async_accept(accept_handler handler) override {
        acceptor_.async_accept([h = std::move(handler)](boost::system::error_code ec, tcp::socket s) mutable {
            if (!ec) ::fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);  // the seam's promise (m0/reactor.hpp)
            h(ec, std::move(s));
        });
    }
    tcp::endpoint local_endpoint() const override { return acceptor_.local_endpoint(); }
    void cancel() {
        boost::system::error_code ec;
        acceptor_.cancel(ec);
    }

private:
    tcp::acceptor acceptor_;
};

// An executor thread wakes the reactor by posting to its io_context (the
// lane calls this only after the reactor announced it is about to block).
class posting_waker final : public m0::reactor_waker {
public:
    explicit posting_waker(asio::io_context& io) : io_(io) {}
    void wake() noexcept override { asio::post(io_, [] {}); }

private:
    asio::io_context& io_;
};

// Posts work to the reactor from any thread while it runs.
class reactor_handle final : public m0::reactor_handle {
public:
    explicit reactor_handle(asio::io_context& io) : io_(&io) {}
    bool post(std::function<void()> fn) override {
        std::lock_guard lock(mutex_);
        if (!io_) return false;
        asio::post(*io_, std::move(fn));
        return true;
    }
    unsigned reactor_index() const noexcept override { return 0; }
    void close() {
        std::lock_guard lock(mutex_);
        io_ = nullptr;
    }

private:
    std::mutex mutex_;
    asio::io_context* io_;
};

class single_reactor final : public m0::reactor_set {
public:
    single_reactor(m0::frontend& fe, m0::executor& ex, m0::scheduler_options options)
        : frontend_(fe), executor_(ex), options_(std::move(options)) {}
    ~single_reactor() override { shutdown(); }

    void start() override {
        // Sockets a supervisor or systemd passed, else our own.
        std::vector<int> fds = !options_.shared_fds.empty()      ? options_.shared_fds
                               : !options_.reactor_fds.empty() ? options_.reactor_fds.front()
                                                               : std::vector<int>{};
        if (fds.empty()) {
            for (auto address : options_.addresses) {
                if (options_.check_addresses) m0::check_no_other_listener(address);
                fds.push_back(m0::open_listen_socket(address, true, options_.backlog));
            }
        }
        for (int fd : fds) {
            listeners_.push_back(std::make_unique<acceptor_listener>(io_, fd));
            bound_.push_back(m0::bound_endpoint(fd));
            ctx_.listeners.push_back(listeners_.back().get());
        }
        if (options_.telemetry) telemetry_ = options_.telemetry(0, io_);
        stats_ = telemetry_ && telemetry_->stats() ? telemetry_->stats() : &own_stats_;
        lane_ = executor_.make_lane(std::make_shared<posting_waker>(io_));
        ctx_.io = &io_;
        ctx_.lane = lane_.get();
        ctx_.executor_lanes = {lane_.get()};
        ctx_.stats = stats_;
        ctx_.recorder = telemetry_ ? telemetry_->recorder() : nullptr;
        ctx_.limits = &options_.limits;
        ctx_.client_policy = options_.clients.get();
        ctx_.services = options_.services;
        ctx_.stop_flag = &stop_;
        ctx_.reactor = handle_;
        std::exception_ptr failed;
        std::mutex m;
        std::condition_variable started;
        bool ready = false;
        thread_ = std::thread([&] {
            std::exception_ptr error;
            try {
                frontend_.start_reactor(ctx_);
            } catch (...) {
                error = std::current_exception();
            }
            const bool serving = !error;
            {
                // Notified under the lock: start() cannot return, and take
                // failed, m and started (its locals) with it, before this
                // thread is done with them. Nothing of them is touched after.
                std::lock_guard lock(m);
                failed = error;
                ready = true;
                started.notify_one();
            }
            if (serving) loop();
            frontend_.stop_reactor(ctx_);
            if (telemetry_) telemetry_->loop_ended();
            handle_->close();
        });
        std::unique_lock lock(m);
        started.wait(lock, [&] { return ready; });
        lock.unlock();
        if (failed) {
            stop_.store(true, std::memory_order_release);
            thread_.join();
            std::rethrow_exception(failed);
        }
    }

    std::vector<m0::reactor_report> drain(std::chrono::milliseconds timeout) override {
        std::lock_guard lock(drain_mutex_);
        if (!thread_.joinable()) return reports_;
        // Drain: the reactor stops accepting and waits for what is open.
        const auto at_drain = stats_->live_connections.load();
        phase_.store(1, std::memory_order_release);
        asio::post(io_, [] {});
        std::unique_lock done_lock(done_mutex_);
        if (timeout.count() <= 0 || !done_.wait_for(done_lock, timeout, [&] { return finished_; })) {
            done_lock.unlock();
            // Past the deadline: force-close, then stop.
            phase_.store(2, std::memory_order_release);
            asio::post(io_, [] {});
        } else {
            done_lock.unlock();
        }
        thread_.join();
        m0::reactor_report r;
        r.connections_at_drain = at_drain;
        r.force_closed = stats_->force_closed.load();
        r.drained = at_drain > r.force_closed ? at_drain - r.force_closed : 0;
        r.accepted = stats_->accepted.load();
        r.requests = stats_->requests.load();
        r.timed_out = r.force_closed > 0;
        reports_ = {r};
        return reports_;
    }

    void shutdown() override { drain(std::chrono::milliseconds::zero()); }
    unsigned reactor_count() const override { return 1; }
    unsigned crashed_reactor_count() const override { return 0; }
    bool is_running(unsigned reactor) const override { return reactor == 0 && thread_.joinable(); }
    const m0::reactor_stats& stats(unsigned) const override { return *stats_; }
    std::vector<tcp::endpoint> local_endpoints() const override { return bound_; }

private:
    // The reactor's loop: one run_reactor_pass after another, watching the
    // drain phase the stopper raises (the pass wakes when it is posted to).
    void loop() {
        auto guard = asio::make_work_guard(io_);
        int seen = 0;
        for (;;) {
            const int phase = phase_.load(std::memory_order_acquire);
            if (phase >= 1 && seen < 1) {
                for (auto& l : listeners_) l->cancel();
                ctx_.run_drain_hooks();
            }
            if (phase >= 2 && seen < 2) ctx_.run_force_close_hooks();
            seen = phase;
            const bool closed = stats_->live_connections.load() == 0;
            // Draining: wait for every response and job. Force-closing:
            // nothing more is owed to a client, so a job still running
            // (application code that may never return) is abandoned.
            if (seen >= 2 && closed) break;
            // Before leaving, run what is ready: a listener that accepted a
            // connection just before the drain may have posted its hand-over
            // to the engine (a socket no session counts yet).
            if (seen >= 1 && closed && lane_->jobs_in_flight() == 0) {
                if (io_.poll_one() == 0) break;
                continue;
            }
            if (stop_.load(std::memory_order_acquire)) break;
            m0::run_reactor_pass(io_, *lane_);
        }
        {
            std::lock_guard lock(done_mutex_);
            finished_ = true;
        }
        done_.notify_all();
        ctx_.clear_hooks();
        // An abandoned job will still reach its lane: leave it to it.
        if (lane_->jobs_in_flight() > 0) (void)lane_.release();
    }

    m0::frontend& frontend_;
    m0::executor& executor_;
    m0::scheduler_options options_;
    asio::io_context io_{1};
    std::shared_ptr<reactor_handle> handle_ = std::make_shared<reactor_handle>(io_);
    std::vector<std::unique_ptr<acceptor_listener>> listeners_;
    std::vector<tcp::endpoint> bound_;
    std::unique_ptr<m0::reactor_telemetry> telemetry_;
    m0::reactor_stats own_stats_;
    m0::reactor_stats* stats_ = &own_stats_;
    std::unique_ptr<m0::executor_lane> lane_;
    m0::reactor_context ctx_;
    std::atomic<bool> stop_{false};
    std::atomic<int> phase_{0};  // 0 serving, 1 draining, 2 force-closing
    std::thread thread_;
    std::mutex drain_mutex_, done_mutex_;
    std::condition_variable done_;
    bool finished_ = false;
    std::vector<m0::reactor_report> reports_;
};

class single_scheduler final : public m0::scheduler {
public:
    const char* name() const noexcept override { return "single"; }
    // One reuseport socket per process and address.
    m0::socket_layout sockets(unsigned) const override { return {m0::listener_strategy::reuseport, 1}; }
    std::unique_ptr<m0::reactor_set> make_reactors(m0::frontend& fe, std::vector<m0::executor*> executors,
                                                   m0::scheduler_options options) override {
        if (options.reactors != 1)
            throw std::invalid_argument("server.threads must be 1 with scheduler 'single', got " +
                                        std::to_string(options.reactors));
        if (executors.size() != 1)
            throw std::invalid_argument("scheduler 'single' serves one executor (no `executors:` or `mounts:`)");
        if (options.addresses.empty()) throw std::invalid_argument("no listen address given");
        return std::make_unique<single_reactor>(fe, *executors.front(), std::move(options));
    }
};

std::unique_ptr<m0::scheduler> make_single(m0::plugin_context& ctx) {
    ctx.section->allow_keys({"type"});  // no keys of its own
    return std::make_unique<single_scheduler>();
}

}  // namespace

M0_SCHEDULER_PLUGIN("single", "one reactor thread, accepting for itself (an example built out of tree)", make_single);
