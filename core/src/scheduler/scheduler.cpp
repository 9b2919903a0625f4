#include "scheduler/scheduler.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <sched.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include <fcntl.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include <m0/log.hpp>
#include <m0/reactor_pass.hpp>

#include "scheduler/combined_lane.hpp"
#include "scheduler/listen_socket.hpp"
#include "scheduler/worker_listeners.hpp"
#include "telemetry/request_recorder.hpp"

namespace m0 {

namespace {

constexpr unsigned max_workers = 256;
// After the drain deadline, how long force-closed workers get, in all, to
// return before they are detached and reported. One budget shared by the
// force-close, stop and join steps, so a reactor held by application code
// (the inline executor) costs a stop this long once, not once per step.
constexpr std::chrono::milliseconds exit_grace{2000};

enum phase : int { serving = 0, draining = 1, force_closing = 2 };

// Wakes a reactor blocked in its io_context with one write(2) to an eventfd
// the io_context watches. Cheaper than asio::post, which takes the
// scheduler's mutex and re-arms its interrupter with epoll_ctl on every wake;
// the executor protocol calls this only when the reactor announced it is
// about to block, so the cost is paid once per sleep, not per completion.
// Executor lanes share ownership of it: a pool thread may wake it after the
// reactor has gone, which then writes to an eventfd nobody watches.
class eventfd_waker final : public reactor_waker {
public:
    eventfd_waker() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
        if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd for the reactor waker");
    }
    ~eventfd_waker() override { ::close(fd_); }
    eventfd_waker(const eventfd_waker&) = delete;
    eventfd_waker& operator=(const eventfd_waker&) = delete;

    // Each write is an edge the reactor's epoll keeps until its next wait
    // (see wake_watch), so a wake sent before the reactor blocks makes that
    // wait return at once: none is lost.
    void wake() noexcept override {
        std::uint64_t one = 1;
        (void)!::write(fd_, &one, sizeof one);
    }
    int fd() const noexcept { return fd_; }

private:
    const int fd_;
};

// The worker's side of the waker: its io_context watches a duplicate of the
// eventfd (the same counter), closed with the worker while the waker lives on.
//
// Nothing is ever read from it. Asio registers a descriptor edge-triggered
// (EPOLLET), and an eventfd signals its waiters on every write, counter
// already non-zero or not, so each wake is a new edge that ends the
// reactor's epoll_wait, also one sent before the reactor blocked. With no
// operation pending, the event costs Asio a lock and no system call; a
// pending read (and the speculative read that re-arms it) cost the reactor
// two read(2)s per wake, and a pending wait an epoll_ctl. The counter only
// grows: it saturates after 2^64 - 2 wakes, which no process lives to send.
// The worker's work guard, not a pending operation, keeps run_one()
// blocking.
class wake_watch {
public:
    wake_watch(boost::asio::io_context& io, const eventfd_waker& waker) : channel_(io) {
        const int fd = ::fcntl(waker.fd(), F_DUPFD_CLOEXEC, 0);
        if (fd < 0) throw std::system_error(errno, std::generic_category(), "dup of the reactor waker");
        channel_.assign(fd);
    }

private:
    boost::asio::posix::stream_descriptor channel_;
};

// reactor_context::reactor: posts to the worker's io_context while it exists.
class worker_reactor_handle final : public reactor_handle {
public:
    worker_reactor_handle(boost::asio::io_context& io, unsigned index) : io_(&io), index_(index) {}
    bool post(std::function<void()> fn) override {
        std::lock_guard lock(mutex_);
        if (!io_) return false;
        boost::asio::post(*io_, std::move(fn));
        return true;
    }
    unsigned reactor_index() const noexcept override { return index_; }
    // The worker is going: later posts are dropped.
    void close() {
        std::lock_guard lock(mutex_);
        io_ = nullptr;
    }

private:
    std::mutex mutex_;
    boost::asio::io_context* io_;
    const unsigned index_;
};

}  // namespace

listener_strategy effective_listener_strategy(listener_strategy configured) {
    const char* env = std::getenv("M0_REUSEPORT_WORKERS");
    if (env && std::string_view(env) == "0") return listener_strategy::shared;
    return configured;
}

// Everything workers and the stopper share. Heap-allocated and owned by
// shared_ptr so a detached worker can never outlive it.
struct scheduler::shared_state {
    std::atomic<bool> stop{false};
    std::atomic<int> phase{serving};
    std::mutex mutex;
    std::condition_variable changed;  // a worker started or finished
    // Guards posting wakes against the io_contexts being freed, so a hard
    // stop may be requested from another thread while drain() runs.
    std::mutex io_mutex;
    bool ios_alive = true;
};

struct scheduler::worker {
    unsigned index = 0;
    // Heap-allocated so that a worker that never returns can be leaked
    // (detached) instead of freed under its feet.
    boost::asio::io_context* io = nullptr;
    std::shared_ptr<eventfd_waker> waker;
    std::unique_ptr<wake_watch> watch;
    std::shared_ptr<worker_reactor_handle> reactor;
    std::unique_ptr<executor_lane> lane;
    std::vector<std::unique_ptr<worker_listener>> listeners;
    reactor_stats own_stats;
    reactor_stats* stats = &own_stats;  // or a slot of the metrics table
    std::unique_ptr<request_recorder> recorder;
    reactor_context ctx;
    std::thread thread;
    std::atomic<bool> started{false};   // start_reactor returned (or threw)
    std::atomic<bool> finished{false};  // loop over, about to return
    std::atomic<bool> crashed{false};
    std::string error;                  // written before finished is set
    std::uint64_t connections_at_drain = 0;
    std::uint64_t in_flight_at_deadline = 0;
    std::uint64_t jobs_abandoned = 0;
    bool timed_out = false;
    bool detached = false;
};

scheduler::scheduler(frontend& fe, executor& ex, scheduler_options options)
    : scheduler(fe, std::vector<executor*>{&ex}, std::move(options)) {}

scheduler::scheduler(frontend& fe, std::vector<executor*> executors, scheduler_options options)
    : frontend_(fe), executors_(std::move(executors)), options_(std::move(options)),
      state_(std::make_shared<shared_state>()) {
    if (executors_.empty()) throw std::invalid_argument("no executor given");
    if (options_.workers < 1 || options_.workers > max_workers) {
        throw std::invalid_argument("server.threads must be between 1 and " + std::to_string(max_workers) +
                                    ", got " + std::to_string(options_.workers));
    }
    if (options_.addresses.empty()) throw std::invalid_argument("no listen address given");
}

scheduler::~scheduler() {
    if (started_ && !finished_) shutdown();
    // A detached worker's thread may still reference its own state.
    for (auto& w : workers_)
        if (w->detached) (void)w.release();
}

unsigned scheduler::reactor_count() const { return options_.workers; }

void scheduler::start() {
    if (started_) throw std::logic_error("scheduler already started");
    started_ = true;
    auto strategy = effective_listener_strategy(options_.listener);
    if (frontend_.needs_per_reactor_listeners()) strategy = listener_strategy::reuseport;
    if (!options_.shared_fds.empty()) strategy = listener_strategy::shared;
    const bool given = !options_.shared_fds.empty() || !options_.reactor_fds.empty();
    bool exclusive = strategy == listener_strategy::shared && epoll_exclusive_supported();
    if (strategy == listener_strategy::shared && !exclusive)
        log::warning("EPOLLEXCLUSIVE is not supported by this kernel: shared listener wakes every worker");

    try {
        auto addresses = options_.addresses;
        // A shared listener binds without SO_REUSEPORT: its bind is the check.
        if (strategy == listener_strategy::reuseport && options_.check_addresses && !given)
            for (const auto& a : addresses) check_no_other_listener(a);
        if (!options_.shared_fds.empty()) {
            shared_fds_ = std::move(options_.shared_fds);
            for (int fd : shared_fds_) bound_.push_back(bound_endpoint(fd));
        } else if (strategy == listener_strategy::shared) {
            for (auto& a : addresses) {
                shared_fds_.push_back(open_listen_socket(a, false, options_.backlog));
                bound_.push_back(a);
            }
        }
        for (unsigned i = 0; i < options_.workers; ++i) {
            auto w = std::make_unique<worker>();
            w->index = i;
            w->io = new boost::asio::io_context(1);
            w->waker = std::make_shared<eventfd_waker>();
            w->watch = std::make_unique<wake_watch>(*w->io, *w->waker);
            w->reactor = std::make_shared<worker_reactor_handle>(*w->io, i);
            // The loop serves one lane: the executor's, or all of them combined.
            std::vector<std::unique_ptr<executor_lane>> lanes;
            for (auto* ex : executors_) lanes.push_back(ex->make_lane(w->waker));
            for (auto& l : lanes) w->ctx.executor_lanes.push_back(l.get());
            w->ctx.lane = lanes.front().get();
            if (lanes.size() == 1)
                w->lane = std::move(lanes.front());
            else
                w->lane = std::make_unique<combined_lane>(std::move(lanes));
            for (std::size_t a = 0; a < addresses.size(); ++a) {
                if (strategy == listener_strategy::reuseport) {
                    // Bound serially; a port 0 is resolved by the first worker
                    // and reused by the others so they share one address.
                    int fd = given ? std::exchange(options_.reactor_fds.at(i).at(a), -1)
                                   : open_listen_socket(addresses[a], true, options_.backlog);
                    w->listeners.push_back(make_reuseport_listener(*w->io, fd));
                    if (i == 0) bound_.push_back(given ? bound_endpoint(fd) : addresses[a]);
                } else {
                    w->listeners.push_back(make_shared_listener(*w->io, shared_fds_[a], exclusive));
                }
            }
            auto& ctx = w->ctx;
            ctx.index = i;
            ctx.reactor_count = options_.workers;
            ctx.io = w->io;
            for (auto& l : w->listeners) ctx.listeners.push_back(l.get());
            ctx.stop_flag = &state_->stop;
            if (options_.stats_slot) w->stats = options_.stats_slot(i);
            if (options_.make_recorder) w->recorder = options_.make_recorder(i, *w->io);
            ctx.stats = w->stats;
            ctx.recorder = w->recorder.get();
            ctx.limits = &options_.limits;
            ctx.client_policy = options_.clients.get();
            ctx.reactor = w->reactor;
            ctx.services = options_.services;
            workers_.push_back(std::move(w));
        }
        for (auto& w : workers_) {
            worker* raw = w.get();
            w->thread = std::thread([this, raw] { run_worker(*raw); });
        }
        // Wait until every worker has set up its frontend: a frontend that
        // cannot start is a start-up error, not a crash found later.
        std::unique_lock lock(state_->mutex);
        state_->changed.wait(lock, [&] {
            for (auto& w : workers_)
                if (!w->started.load(std::memory_order_acquire)) return false;
            return true;
        });
        for (auto& w : workers_) {
            if (w->crashed.load(std::memory_order_acquire)) {
                throw std::runtime_error("reactor " + std::to_string(w->index) + " failed to start: " + w->error);
            }
        }
    } catch (...) {
        // Given sockets no listener took are still ours to close.
        for (auto& fds : options_.reactor_fds)
            for (int& fd : fds)
                if (fd >= 0) ::close(std::exchange(fd, -1));
        stop_and_join_all(std::chrono::steady_clock::now() + exit_grace);
        throw;
    }
}

void scheduler::run_worker(worker& w) {
    char name[16];
    std::snprintf(name, sizeof name, "m0-reactor-%u", w.index);
    pthread_setname_np(pthread_self(), name);
    if (options_.pin_cores) {
        unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((options_.first_core + w.index) % cpus, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }

    auto& io = *w.io;
    auto& lane = *w.lane;
    auto& state = *state_;
    auto guard = boost::asio::make_work_guard(io);
    auto notify = [&] {
        std::lock_guard lock(state.mutex);
        state.changed.notify_all();
    };

    try {
        frontend_.start_reactor(w.ctx);
    } catch (const std::exception& e) {
        w.error = e.what();
        w.crashed.store(true, std::memory_order_release);
    }
    w.started.store(true, std::memory_order_release);
    notify();

    // Only for the metrics: one more virtual call per pass otherwise.
    const bool publish_jobs = static_cast<bool>(options_.stats_slot);
    int seen = serving;
    reactor_pass_state pass_state;
    if (!w.crashed.load(std::memory_order_acquire)) {
        try {
            for (;;) {
                // The stopper stores the phase before the stop flag, so a
                // hard stop is always seen as a force-close first: nothing
                // in flight is left to be torn down with the io_context.
                bool stop = state.stop.load(std::memory_order_acquire);
                int phase = state.phase.load(std::memory_order_acquire);
                if (phase != seen) {
                    if (seen < draining && phase >= draining) {
                        w.connections_at_drain = w.stats->live_connections.load(std::memory_order_relaxed);
                        for (auto& l : w.listeners) l->cancel();
                        w.ctx.run_drain_hooks();
                    }
                    if (seen < force_closing && phase >= force_closing) {
                        w.in_flight_at_deadline = w.stats->in_flight.load(std::memory_order_relaxed);
                        w.timed_out = w.stats->live_connections.load(std::memory_order_relaxed) > 0 ||
                                      w.in_flight_at_deadline > 0 || lane.jobs_in_flight() > 0;
                        w.ctx.run_force_close_hooks();
                    }
                    seen = phase;
                }
                if (stop) break;
                const bool idle = w.stats->live_connections.load(std::memory_order_relaxed) == 0;
                // Draining: wait for every response and job. Past the
                // deadline nothing more is owed to a client (its connection
                // is closed), so jobs still running — application code that
                // may never return — are abandoned, not waited for.
                if (seen >= force_closing && idle) break;
                if (seen >= draining && idle && w.stats->in_flight.load(std::memory_order_relaxed) == 0 &&
                    lane.jobs_in_flight() == 0)
                    break;
                run_reactor_pass(io, lane, std::chrono::steady_clock::time_point::max(), &pass_state);
                if (publish_jobs) w.stats->executor_jobs.store(lane.jobs_in_flight(), std::memory_order_relaxed);
            }
        } catch (const std::exception& e) {
            w.error = e.what();
            w.crashed.store(true, std::memory_order_release);
            log::error("reactor " + std::to_string(w.index) + " crashed: " + w.error);
        }
        // A dead worker's reuseport socket would keep receiving its share of
        // connections; refuse them so the kernel sends them elsewhere.
        // Its open connections would hang until exit: close them too.
        if (w.crashed.load(std::memory_order_acquire)) {
            for (auto& l : w.listeners) l->cancel();
            try {
                w.ctx.run_force_close_hooks();
            } catch (const std::exception& e) {
                log::error("reactor " + std::to_string(w.index) + ": closing after the crash failed: " + e.what());
            }
        }
    }
    try {
        frontend_.stop_reactor(w.ctx);
    } catch (const std::exception& e) {
        log::error("reactor " + std::to_string(w.index) + ": stop_reactor failed: " + e.what());
    }
    w.jobs_abandoned = lane.jobs_in_flight();
    if (w.recorder) w.recorder->stop();
    w.reactor->close();
    // Thread hooks of an inline lane run on this thread; keep a lane with
    // jobs still out (a hard stop) rather than free what they will touch.
    if (lane.jobs_in_flight() == 0) w.lane.reset();
    w.finished.store(true, std::memory_order_release);
    notify();
}

// The phase only ever rises: a hard stop raised by shutdown() from another
// thread must not be lowered back to a drain by a drain() starting late.
void scheduler::raise_phase(int to) {
    int current = state_->phase.load(std::memory_order_acquire);
    while (current < to && !state_->phase.compare_exchange_weak(current, to, std::memory_order_acq_rel)) {
    }
}

std::vector<worker_report> scheduler::drain(std::chrono::milliseconds timeout) {
    // One drain at a time: a second caller (a hard stop racing the drain it
    // interrupts) waits for the first and gets its reports.
    std::lock_guard drain_lock(drain_mutex_);
    if (finished_ || !started_) return reports_;
    auto& state = *state_;
    auto wake_all = [&] {
        for (auto& w : workers_)
            if (!w->detached) boost::asio::post(*w->io, [] {});
    };
    auto wait_all_until = [&](std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lock(state.mutex);
        return state.changed.wait_until(lock, deadline, [&] {
            for (auto& w : workers_)
                if (!w->finished.load(std::memory_order_acquire)) return false;
            return true;
        });
    };

    bool all_done = false;
    if (timeout > std::chrono::milliseconds::zero() && !state.stop.load(std::memory_order_acquire)) {
        raise_phase(draining);
        wake_all();
        all_done = wait_all_until(std::chrono::steady_clock::now() + timeout);
    }
    auto const grace_deadline = std::chrono::steady_clock::now() + exit_grace;
    if (!all_done) {
        // Half the grace for connections to close on the reactors' own
        // terms, the rest for reactors that only notice the stop flag.
        raise_phase(force_closing);
        wake_all();
        all_done = wait_all_until(std::chrono::steady_clock::now() + exit_grace / 2);
        state.stop.store(true, std::memory_order_release);
        wake_all();
        if (!all_done) all_done = wait_all_until(grace_deadline);
    }
    state.stop.store(true, std::memory_order_release);
    stop_and_join_all(grace_deadline);

    reports_.clear();
    for (auto& w : workers_) {
        worker_report r;
        r.index = w->index;
        r.connections_at_drain = w->connections_at_drain;
        r.force_closed = w->stats->force_closed.load();
        r.drained = r.connections_at_drain > r.force_closed ? r.connections_at_drain - r.force_closed : 0;
        r.in_flight_at_deadline = w->in_flight_at_deadline;
        r.jobs_abandoned = w->jobs_abandoned;
        r.accepted = w->stats->accepted.load();
        r.requests = w->stats->requests.load();
        r.timed_out = w->timed_out || w->detached;
        r.crashed = w->crashed.load();
        r.detached = w->detached;
        r.error = w->detached ? std::string() : w->error;
        reports_.push_back(std::move(r));
    }
    return reports_;
}

void scheduler::shutdown() {
    // Raise the hard stop first, whatever else runs: a drain under way on
    // another thread (or about to start there) then ends at once. The phase
    // rises before the stop flag, so workers force-close before they leave.
    raise_phase(force_closing);
    state_->stop.store(true, std::memory_order_release);
    {
        std::lock_guard lock(state_->io_mutex);
        if (state_->ios_alive)
            for (auto& w : workers_)
                if (w->io && !w->detached) boost::asio::post(*w->io, [] {});
    }
    // Then join (or wait for the drain that does).
    drain(std::chrono::milliseconds::zero());
}

void scheduler::stop_and_join_all(std::chrono::steady_clock::time_point grace_deadline) {
    state_->stop.store(true, std::memory_order_release);
    for (auto& w : workers_) {
        if (!w->thread.joinable()) continue;
        if (w->finished.load(std::memory_order_acquire) || !w->started.load(std::memory_order_acquire)) {
            boost::asio::post(*w->io, [] {});
            w->thread.join();
        } else {
            boost::asio::post(*w->io, [] {});
            std::unique_lock lock(state_->mutex);
            bool done = state_->changed.wait_until(lock, grace_deadline, [&] { return w->finished.load(std::memory_order_acquire); });
            lock.unlock();
            if (done) {
                w->thread.join();
            } else {
                // It will not return: leak what it may still use.
                log::error("reactor " + std::to_string(w->index) + " did not stop in time; detached");
                w->detached = true;
                w->thread.detach();
                (void)new std::vector<std::unique_ptr<worker_listener>>(std::move(w->listeners));
                (void)w->lane.release();
                (void)w->watch.release();
            }
        }
    }
    // Workers are joined: now each listener is closed exactly once.
    for (auto& w : workers_) {
        if (w->detached) continue;
        // Frontend state held by the drain hooks owns sockets of this
        // worker's io_context: release it while the io_context still exists.
        w->ctx.clear_hooks();
        w->listeners.clear();
        if (w->lane && w->lane->jobs_in_flight() > 0) {
            // Jobs were abandoned on executor threads: they still hold
            // exchanges (sockets of this io_context) and will reach their
            // lane when they end. Leak the lane and what the jobs own rather
            // than free them under those threads; the waker is shared.
            (void)w->lane.release();
        } else {
            w->lane.reset();
        }
        w->watch.reset();
    }
    std::lock_guard lock(state_->io_mutex);
    state_->ios_alive = false;
    for (auto& w : workers_) {
        if (w->detached) continue;
        delete w->io;
        w->io = nullptr;
    }
    for (int fd : shared_fds_) ::close(fd);
    shared_fds_.clear();
    finished_ = true;
}

unsigned scheduler::crashed_worker_count() const {
    unsigned n = 0;
    for (auto& w : workers_) n += w->crashed.load(std::memory_order_acquire) ? 1 : 0;
    return n;
}

bool scheduler::is_running(unsigned i) const {
    if (i >= workers_.size()) return false;
    auto& w = *workers_[i];
    return w.started.load(std::memory_order_acquire) && !w.finished.load(std::memory_order_acquire) &&
           !w.crashed.load(std::memory_order_acquire);
}

const reactor_stats& scheduler::stats(unsigned i) const { return *workers_.at(i)->stats; }

std::vector<boost::asio::ip::tcp::endpoint> scheduler::local_endpoints() const { return bound_; }

}  // namespace m0
