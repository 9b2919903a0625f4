#include <m0/reactors/reactor_group.hpp>

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

#include <m0/reactors/combined_lane.hpp>

namespace m0::reactors {

namespace {

// After the drain deadline, how long force-closed reactors get, in all, to
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

// The reactor's side of the waker: its io_context watches a duplicate of the
// eventfd (the same counter), closed with the reactor while the waker lives on.
//
// Nothing is ever read from it. Asio registers a descriptor edge-triggered
// (EPOLLET), and an eventfd signals its waiters on every write, counter
// already non-zero or not, so each wake is a new edge that ends the
// reactor's epoll_wait, also one sent before the reactor blocked. With no
// operation pending, the event costs Asio a lock and no system call; a
// pending read (and the speculative read that re-arms it) cost the reactor
// two read(2)s per wake, and a pending wait an epoll_ctl. The counter only
// grows: it saturates after 2^64 - 2 wakes, which no process lives to send.
// The reactor's work guard, not a pending operation, keeps run_one()
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

// reactor_context::reactor: posts to the reactor's io_context while it exists.
class posting_reactor_handle final : public reactor_handle {
public:
    posting_reactor_handle(boost::asio::io_context& io, unsigned index) : io_(&io), index_(index) {}
    bool post(std::function<void()> fn) override {
        std::lock_guard lock(mutex_);
        if (!io_) return false;
        boost::asio::post(*io_, std::move(fn));
        return true;
    }
    unsigned reactor_index() const noexcept override { return index_; }
    // The reactor is going: later posts are dropped.
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

// Everything reactors and the stopper share. Heap-allocated and owned by
// shared_ptr so a detached reactor can never outlive it.
struct reactor_group::shared_state {
    std::atomic<bool> stop{false};
    std::atomic<int> phase{serving};
    std::mutex mutex;
    std::condition_variable changed;  // a reactor started or finished
    // Guards posting wakes against the io_contexts being freed, so a hard
    // stop may be requested from another thread while drain() runs.
    std::mutex io_mutex;
    bool ios_alive = true;
};

struct reactor_group::reactor {
    unsigned index = 0;
    // Heap-allocated so that a reactor that never returns can be leaked
    // (detached) instead of freed under its feet.
    boost::asio::io_context* io = nullptr;
    std::shared_ptr<eventfd_waker> waker;
    std::unique_ptr<wake_watch> watch;
    std::shared_ptr<posting_reactor_handle> handle;
    std::unique_ptr<executor_lane> lane;
    std::vector<std::unique_ptr<reactor_listener>> listeners;
    reactor_stats own_stats;
    reactor_stats* stats = &own_stats;  // or a slot of the metrics table
    std::unique_ptr<reactor_telemetry> telemetry;
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

reactor_group::reactor_group(frontend& fe, std::vector<executor*> executors, scheduler_options options,
                             std::unique_ptr<connection_placement> placement)
    : frontend_(fe), executors_(std::move(executors)), options_(std::move(options)),
      placement_(std::move(placement)), state_(std::make_shared<shared_state>()) {
    if (executors_.empty()) throw std::invalid_argument("no executor given");
    if (options_.reactors < 1 || options_.reactors > max_reactors) {
        throw std::invalid_argument("server.threads must be between 1 and " + std::to_string(max_reactors) +
                                    ", got " + std::to_string(options_.reactors));
    }
    if (options_.addresses.empty()) throw std::invalid_argument("no listen address given");
}

reactor_group::~reactor_group() {
    if (started_ && !finished_) shutdown();
    // A detached reactor's thread may still reference its own state.
    for (auto& r : reactors_)
        if (r->detached) (void)r.release();
}

unsigned reactor_group::reactor_count() const { return options_.reactors; }

void reactor_group::start() {
    if (started_) throw std::logic_error("reactors already started");
    started_ = true;
    try {
        bound_ = placement_->open(options_);
        for (unsigned i = 0; i < options_.reactors; ++i) {
            auto r = std::make_unique<reactor>();
            r->index = i;
            r->io = new boost::asio::io_context(1);
            r->waker = std::make_shared<eventfd_waker>();
            r->watch = std::make_unique<wake_watch>(*r->io, *r->waker);
            r->handle = std::make_shared<posting_reactor_handle>(*r->io, i);
            // The loop serves one lane: the executor's, or all of them combined.
            std::vector<std::unique_ptr<executor_lane>> lanes;
            for (auto* ex : executors_) lanes.push_back(ex->make_lane(r->waker));
            for (auto& l : lanes) r->ctx.executor_lanes.push_back(l.get());
            r->ctx.lane = lanes.front().get();
            if (lanes.size() == 1)
                r->lane = std::move(lanes.front());
            else
                r->lane = std::make_unique<combined_lane>(std::move(lanes));
            if (options_.telemetry) r->telemetry = options_.telemetry(i, *r->io);
            if (r->telemetry && r->telemetry->stats()) r->stats = r->telemetry->stats();
            r->listeners = placement_->listeners_for(i, *r->io, *r->stats);
            auto& ctx = r->ctx;
            ctx.index = i;
            ctx.reactor_count = options_.reactors;
            ctx.io = r->io;
            for (auto& l : r->listeners) ctx.listeners.push_back(l.get());
            ctx.stop_flag = &state_->stop;
            ctx.stats = r->stats;
            ctx.recorder = r->telemetry ? r->telemetry->recorder() : nullptr;
            ctx.limits = &options_.limits;
            ctx.client_policy = options_.clients.get();
            ctx.reactor = r->handle;
            ctx.services = options_.services;
            reactors_.push_back(std::move(r));
        }
        for (auto& r : reactors_) {
            reactor* raw = r.get();
            r->thread = std::thread([this, raw] { run_reactor(*raw); });
        }
        // Wait until every reactor has set up its frontend: a frontend that
        // cannot start is a start-up error, not a crash found later.
        {
            std::unique_lock lock(state_->mutex);
            state_->changed.wait(lock, [&] {
                for (auto& r : reactors_)
                    if (!r->started.load(std::memory_order_acquire)) return false;
                return true;
            });
        }
        for (auto& r : reactors_) {
            if (r->crashed.load(std::memory_order_acquire)) {
                throw std::runtime_error("reactor " + std::to_string(r->index) + " failed to start: " + r->error);
            }
        }
        placement_->reactors_started();
    } catch (...) {
        placement_->stop_placing();
        stop_and_join_all(std::chrono::steady_clock::now() + exit_grace);
        throw;
    }
}

void reactor_group::run_reactor(reactor& r) {
    char name[16];
    std::snprintf(name, sizeof name, "m0-reactor-%u", r.index);
    pthread_setname_np(pthread_self(), name);
    if (options_.pin_cores) {
        unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((options_.first_core + r.index) % cpus, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }

    auto& io = *r.io;
    auto& lane = *r.lane;
    auto& state = *state_;
    auto guard = boost::asio::make_work_guard(io);
    auto notify = [&] {
        std::lock_guard lock(state.mutex);
        state.changed.notify_all();
    };

    try {
        frontend_.start_reactor(r.ctx);
    } catch (const std::exception& e) {
        r.error = e.what();
        r.crashed.store(true, std::memory_order_release);
    }
    r.started.store(true, std::memory_order_release);
    notify();

    // Only for the metrics: one more virtual call per pass otherwise.
    const bool publish_jobs = r.telemetry && r.telemetry->stats();
    int seen = serving;
    reactor_pass_state pass_state;
    if (!r.crashed.load(std::memory_order_acquire)) {
        try {
            for (;;) {
                // The stopper stores the phase before the stop flag, so a
                // hard stop is always seen as a force-close first: nothing
                // in flight is left to be torn down with the io_context.
                bool stop = state.stop.load(std::memory_order_acquire);
                int phase = state.phase.load(std::memory_order_acquire);
                if (phase != seen) {
                    if (seen < draining && phase >= draining) {
                        r.connections_at_drain = r.stats->live_connections.load(std::memory_order_relaxed);
                        for (auto& l : r.listeners) l->cancel();
                        r.ctx.run_drain_hooks();
                    }
                    if (seen < force_closing && phase >= force_closing) {
                        r.in_flight_at_deadline = r.stats->in_flight.load(std::memory_order_relaxed);
                        r.timed_out = r.stats->live_connections.load(std::memory_order_relaxed) > 0 ||
                                      r.in_flight_at_deadline > 0 || lane.jobs_in_flight() > 0;
                        r.ctx.run_force_close_hooks();
                    }
                    seen = phase;
                }
                if (stop) break;
                const bool idle = r.stats->live_connections.load(std::memory_order_relaxed) == 0;
                // Draining: wait for every response and job. Past the
                // deadline nothing more is owed to a client (its connection
                // is closed), so jobs still running — application code that
                // may never return — are abandoned, not waited for.
                if (seen >= force_closing && idle) break;
                if (seen >= draining && idle && r.stats->in_flight.load(std::memory_order_relaxed) == 0 &&
                    lane.jobs_in_flight() == 0) {
                    // Idle, but a listener may have taken a connection just
                    // before the drain and posted its hand-over to the
                    // engine: a socket in no session yet, not counted live,
                    // whose client has sent its request. Leaving would reset
                    // it. Leave once nothing is ready to run; what runs is
                    // looked at again (a connection handed over is live).
                    if (io.poll_one() == 0) break;
                    pass_state.io_polled = false;
                    continue;
                }
                run_reactor_pass(io, lane, std::chrono::steady_clock::time_point::max(), &pass_state);
                if (publish_jobs) r.stats->executor_jobs.store(lane.jobs_in_flight(), std::memory_order_relaxed);
            }
        } catch (const std::exception& e) {
            r.error = e.what();
            r.crashed.store(true, std::memory_order_release);
            log::error("reactor " + std::to_string(r.index) + " crashed: " + r.error);
        }
        // A dead reactor's reuseport socket would keep receiving its share
        // of connections; refuse them so the kernel sends them elsewhere.
        // Its open connections would hang until exit: close them too.
        if (r.crashed.load(std::memory_order_acquire)) {
            for (auto& l : r.listeners) l->cancel();
            try {
                r.ctx.run_force_close_hooks();
            } catch (const std::exception& e) {
                log::error("reactor " + std::to_string(r.index) + ": closing after the crash failed: " + e.what());
            }
        }
    }
    try {
        frontend_.stop_reactor(r.ctx);
    } catch (const std::exception& e) {
        log::error("reactor " + std::to_string(r.index) + ": stop_reactor failed: " + e.what());
    }
    r.jobs_abandoned = lane.jobs_in_flight();
    if (r.telemetry) r.telemetry->loop_ended();
    r.handle->close();
    // Thread hooks of an inline lane run on this thread; keep a lane with
    // jobs still out (a hard stop) rather than free what they will touch.
    if (lane.jobs_in_flight() == 0) r.lane.reset();
    r.finished.store(true, std::memory_order_release);
    notify();
}

// The phase only ever rises: a hard stop raised by shutdown() from another
// thread must not be lowered back to a drain by a drain() starting late.
void reactor_group::raise_phase(int to) {
    int current = state_->phase.load(std::memory_order_acquire);
    while (current < to && !state_->phase.compare_exchange_weak(current, to, std::memory_order_acq_rel)) {
    }
}

std::vector<reactor_report> reactor_group::drain(std::chrono::milliseconds timeout) {
    // One drain at a time: a second caller (a hard stop racing the drain it
    // interrupts) waits for the first and gets its reports.
    std::lock_guard drain_lock(drain_mutex_);
    if (finished_ || !started_) return reports_;
    auto& state = *state_;
    placement_->stop_placing();
    auto wake_all = [&] {
        for (auto& r : reactors_)
            if (!r->detached) boost::asio::post(*r->io, [] {});
    };
    auto wait_all_until = [&](std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lock(state.mutex);
        return state.changed.wait_until(lock, deadline, [&] {
            for (auto& r : reactors_)
                if (!r->finished.load(std::memory_order_acquire)) return false;
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
    for (auto& r : reactors_) {
        reactor_report rep;
        rep.index = r->index;
        rep.connections_at_drain = r->connections_at_drain;
        rep.force_closed = r->stats->force_closed.load();
        rep.drained = rep.connections_at_drain > rep.force_closed ? rep.connections_at_drain - rep.force_closed : 0;
        rep.in_flight_at_deadline = r->in_flight_at_deadline;
        rep.jobs_abandoned = r->jobs_abandoned;
        rep.accepted = r->stats->accepted.load();
        rep.requests = r->stats->requests.load();
        rep.timed_out = r->timed_out || r->detached;
        rep.crashed = r->crashed.load();
        rep.detached = r->detached;
        rep.error = r->detached ? std::string() : r->error;
        reports_.push_back(std::move(rep));
    }
    return reports_;
}

void reactor_group::shutdown() {
    // Raise the hard stop first, whatever else runs: a drain under way on
    // another thread (or about to start there) then ends at once. The phase
    // rises before the stop flag, so reactors force-close before they leave.
    placement_->stop_placing();
    raise_phase(force_closing);
    state_->stop.store(true, std::memory_order_release);
    {
        std::lock_guard lock(state_->io_mutex);
        if (state_->ios_alive)
            for (auto& r : reactors_)
                if (r->io && !r->detached) boost::asio::post(*r->io, [] {});
    }
    // Then join (or wait for the drain that does).
    drain(std::chrono::milliseconds::zero());
}

void reactor_group::stop_and_join_all(std::chrono::steady_clock::time_point grace_deadline) {
    state_->stop.store(true, std::memory_order_release);
    for (auto& r : reactors_) {
        if (!r->thread.joinable()) continue;
        if (r->finished.load(std::memory_order_acquire) || !r->started.load(std::memory_order_acquire)) {
            boost::asio::post(*r->io, [] {});
            r->thread.join();
        } else {
            boost::asio::post(*r->io, [] {});
            std::unique_lock lock(state_->mutex);
            bool done = state_->changed.wait_until(lock, grace_deadline, [&] { return r->finished.load(std::memory_order_acquire); });
            lock.unlock();
            if (done) {
                r->thread.join();
            } else {
                // It will not return: leak what it may still use.
                log::error("reactor " + std::to_string(r->index) + " did not stop in time; detached");
                r->detached = true;
                r->thread.detach();
                (void)new std::vector<std::unique_ptr<reactor_listener>>(std::move(r->listeners));
                (void)r->lane.release();
                (void)r->watch.release();
            }
        }
    }
    // Reactors are joined: now each listener is closed exactly once.
    for (auto& r : reactors_) {
        if (r->detached) continue;
        // Frontend state held by the drain hooks owns sockets of this
        // reactor's io_context: release it while the io_context still exists.
        r->ctx.clear_hooks();
        r->listeners.clear();
        if (r->lane && r->lane->jobs_in_flight() > 0) {
            // Jobs were abandoned on executor threads: they still hold
            // exchanges (sockets of this io_context) and will reach their
            // lane when they end. Leak the lane and what the jobs own rather
            // than free them under those threads; the waker is shared.
            (void)r->lane.release();
        } else {
            r->lane.reset();
        }
        r->watch.reset();
    }
    std::lock_guard lock(state_->io_mutex);
    state_->ios_alive = false;
    for (auto& r : reactors_) {
        if (r->detached) continue;
        r->telemetry.reset();  // its timer belongs to the io_context
        delete r->io;
        r->io = nullptr;
    }
    placement_->close();
    finished_ = true;
}

unsigned reactor_group::crashed_reactor_count() const {
    unsigned n = 0;
    for (auto& r : reactors_) n += r->crashed.load(std::memory_order_acquire) ? 1 : 0;
    return n;
}

bool reactor_group::is_running(unsigned i) const {
    if (i >= reactors_.size()) return false;
    auto& r = *reactors_[i];
    return r.started.load(std::memory_order_acquire) && !r.finished.load(std::memory_order_acquire) &&
           !r.crashed.load(std::memory_order_acquire);
}

const reactor_stats& reactor_group::stats(unsigned i) const { return *reactors_.at(i)->stats; }

std::vector<boost::asio::ip::tcp::endpoint> reactor_group::local_endpoints() const { return bound_; }

}  // namespace m0::reactors
