#include "balanced_placement.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <m0/listen_socket.hpp>
#include <m0/log.hpp>

namespace m0::scheduler_balanced {

namespace asio = boost::asio;
using boost::asio::ip::tcp;
using boost::system::error_code;

namespace {
// Connections taken from one accept socket per readiness, so that one busy
// address does not starve the others on the accept thread.
constexpr int max_accepts_per_wake = 64;
// After an accept error such as EMFILE, wait this long before the next try
// instead of spinning on a socket that stays readable.
constexpr std::chrono::milliseconds accept_retry_delay{50};
}  // namespace

// One accept socket as the accept thread watches it.
struct balanced_placement::accept_point {
    accept_point(asio::io_context& io, int fd) : acceptor(io, socket_protocol(fd), fd), retry(io), pause(io) {}
    tcp::acceptor acceptor;  // owns nothing: released before it is destroyed
    asio::steady_timer retry;
    asio::steady_timer pause;  // sitting out for another process (sit_out)
    bool armed = false;
    // While sitting out: where the sit-out stands, for a wake that ends the
    // pause early.
    struct sitting_out {
        unsigned pauses;
        reactors::stall_watch watch;
    };
    std::optional<sitting_out> sitting;
};

// The wake of one of this process's reactors' entries (deployment_share).
struct balanced_placement::wake_watch {
    wake_watch(asio::io_context& io, int fd) : fd(fd), descriptor(io, fd) {}
    int fd;
    asio::posix::stream_descriptor descriptor;  // owns nothing: released before it is destroyed
};

std::uint64_t balanced_placement::reactor_slot::live() const noexcept {
    // seq_cst: pairs with the engine's increment of `closed` and the
    // paused_ flag (resume_if_room).
    const std::uint64_t closed = stats->closed.load(std::memory_order_seq_cst) - closed_at_start;
    const std::uint64_t p = placed.load(std::memory_order_relaxed);
    return p > closed ? p - closed : 0;
}

balanced_placement::balanced_placement(listener_strategy strategy) : strategy_(strategy) {}

balanced_placement::~balanced_placement() {
    stop_placing();
    close();
}

std::vector<tcp::endpoint> balanced_placement::open(scheduler_options& options) {
    limit_ = options.limits.max_connections_per_reactor;
    // Made before any reactor runs: their engines' demand hooks post to it.
    io_ = std::make_unique<asio::io_context>(1);
    if (!options.shared_fds.empty()) {
        fds_ = std::exchange(options.shared_fds, {});
        // The processes of a prefork deployment share these sockets: a
        // process ahead of another's idle reactor leaves it the next ones.
        share_ = reactors::deployment_share(options.load);
    } else if (!options.reactor_fds.empty()) {
        // A supervisor's reuseport sockets: one set per process (sockets()).
        auto given = std::exchange(options.reactor_fds, {});
        fds_ = std::move(given.front());
        for (std::size_t s = 1; s < given.size(); ++s)
            for (int fd : given[s]) ::close(fd);
    } else {
        auto addresses = options.addresses;
        const bool reuseport = strategy_ == listener_strategy::reuseport;
        if (reuseport && options.check_addresses)
            for (const auto& a : addresses) check_no_other_listener(a);
        for (auto& a : addresses) fds_.push_back(open_listen_socket(a, reuseport, options.backlog));
    }
    for (int fd : fds_) bound_.push_back(bound_endpoint(fd));
    return bound_;
}

std::vector<std::unique_ptr<reactors::reactor_listener>> balanced_placement::listeners_for(unsigned reactor,
                                                                                           asio::io_context& io,
                                                                                           reactor_stats& stats) {
    if (slots_.size() != reactor) throw std::logic_error("balanced: reactors set up out of order");
    auto slot = std::make_unique<reactor_slot>();
    slot->stats = &stats;
    slot->closed_at_start = stats.closed.load(std::memory_order_relaxed);
    std::vector<std::unique_ptr<reactors::reactor_listener>> out;
    for (const auto& local : bound_) {
        auto inbox = std::make_shared<handoff_inbox>(io, local);
        // A reactor whose engine asks for a connection may have room again.
        inbox->on_demand([this] {
            if (paused_.load(std::memory_order_seq_cst)) asio::post(*io_, [this] { resume_if_room(); });
        });
        slot->inboxes.push_back(inbox);
        out.push_back(make_handoff_listener(std::move(inbox)));
    }
    slots_.push_back(std::move(slot));
    return out;
}

void balanced_placement::reactors_started() {
    for (int fd : fds_) points_.push_back(std::make_unique<accept_point>(*io_, fd));
    for (std::size_t a = 0; a < points_.size(); ++a) arm(a);
    // Any of its reactors' wakes is for the accept thread, which places on all.
    if (share_.active())
        for (unsigned r = 0; r < slots_.size(); ++r)
            if (const int fd = share_.wake_fd(r); fd >= 0) wakes_.push_back(std::make_unique<wake_watch>(*io_, fd));
    for (std::size_t w = 0; w < wakes_.size(); ++w) {
        arm_wake(w);
        reactors::deployment_share::consume_wake(wakes_[w]->fd);  // one left by a predecessor is stale
    }
    thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "m0-accept");
        auto guard = asio::make_work_guard(*io_);
        try {
            io_->run();
        } catch (const std::exception& e) {
            log::error(std::string("balanced scheduler: the accept thread stopped: ") + e.what());
        }
    });
}

void balanced_placement::arm(std::size_t a) {
    auto& point = *points_[a];
    if (stopped_) return;
    publish();  // also when armed already (on_readable called from a wake)
    if (point.armed) return;
    point.armed = true;
    point.acceptor.async_wait(tcp::acceptor::wait_read, [this, a](const error_code& ec) {
        points_[a]->armed = false;
        if (!ec) on_readable(a);
    });
}

// Accept thread. Takes what is queued (up to max_accepts_per_wake) and places
// each connection as it comes; when every reactor is full, stops, with the
// connections left in the kernel's backlog until a reactor has room.
void balanced_placement::on_readable(std::size_t a) {
    const int listen_fd = points_[a]->acceptor.native_handle();
    for (int n = 0; n < max_accepts_per_wake; ++n) {
        const int target = choose();
        if (target < 0) {
            resume_if_room();  // pauses, unless a connection closed meanwhile
            return;
        }
        reactors::least_loaded least;
        if (!std::exchange(turn_owed_, false) && ahead_of_an_idle_process(target, least)) {
            // What is queued now is left to the idle one, whose accept
            // thread the kernel may not have woken (it woke this one, and
            // nothing else arrives).
            if (reactors::connections_queued(listen_fd)) reactors::deployment_share::wake(least.wake_fd);
            sit_out(a, 0, reactors::stall_watch(least.total));
            return;
        }
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) break;
            log::warning(std::string("balanced scheduler: accept failed: ") + std::strerror(err) + "; retrying");
            auto& retry = points_[a]->retry;
            retry.expires_after(accept_retry_delay);
            retry.async_wait([this, a](const error_code& ec) {
                if (!ec) arm(a);
            });
            return;
        }
        auto& slot = *slots_[static_cast<unsigned>(target)];
        slot.placed.fetch_add(1, std::memory_order_relaxed);
        slot.inboxes[a]->put(fd);
        if (share_.active()) share_.publish(static_cast<unsigned>(target), slot.live(), true);
    }
    arm(a);
}

void balanced_placement::publish() noexcept {
    if (!share_.active()) return;
    const bool takes = !paused_.load(std::memory_order_relaxed);
    for (unsigned r = 0; r < slots_.size(); ++r) share_.publish(r, slots_[r]->live(), takes);
}

bool balanced_placement::ahead_of_an_idle_process(int target, reactors::least_loaded& least) const {
    if (!share_.active() || std::chrono::steady_clock::now() < distrust_waiting_until_) return false;
    share_.consider_others(least);
    const auto lead = least.wake_fd >= 0 ? reactors::share_lead_allowed_waking : reactors::share_lead_allowed;
    return least.waits && slots_[static_cast<unsigned>(target)]->live() > least.open + lead;
}

// Accept thread. The acceptor stays disarmed while this process sits out
// (deployment_share.hpp), so the other processes' accept threads take what
// arrives; this one looks again after each pause, or sooner when one of them
// gets ahead in turn and wakes it. It says it waits meanwhile: it takes the
// next connection as soon as the others are ahead.
void balanced_placement::sit_out(std::size_t a, unsigned pauses, reactors::stall_watch watch) {
    publish();
    auto& point = *points_[a];
    point.sitting = accept_point::sitting_out{pauses, watch};
    point.pause.expires_after(reactors::share_pause);
    point.pause.async_wait([this, a](const error_code& ec) {
        auto& sitting = points_[a]->sitting;
        if (ec || stopped_ || !sitting) return;  // cancelled, or ended by a wake
        const auto s = *std::exchange(sitting, std::nullopt);
        after_pause(a, s.pauses, s.watch);
    });
}

void balanced_placement::after_pause(std::size_t a, unsigned pauses, reactors::stall_watch watch) {
    const int target = choose();
    reactors::least_loaded least;
    const bool ahead = target >= 0 && ahead_of_an_idle_process(target, least);
    if (ahead && watch.stalled(least.total, true, points_[a]->acceptor.native_handle())) {
        // It says it waits but takes nothing (a stopped process, a
        // thread without a CPU): not waited for for a while.
        distrust_waiting_until_ = std::chrono::steady_clock::now() + reactors::share_distrust_stalled;
    } else if (ahead && pauses + 1 < reactors::share_max_pauses) {
        sit_out(a, pauses + 1, watch);
        return;
    }
    // At least one accept before it looks again. Taken now, not on the
    // next readiness: what was queued meanwhile raised no new edge.
    turn_owed_ = true;
    on_readable(a);
}

void balanced_placement::arm_wake(std::size_t w) {
    wakes_[w]->descriptor.async_wait(asio::posix::stream_descriptor::wait_read, [this, w](const error_code& ec) {
        if (ec || stopped_) return;
        // Armed again before the wake is taken: one written after the read
        // raises a new edge for the new wait (Asio keeps none for later).
        arm_wake(w);
        reactors::deployment_share::consume_wake(wakes_[w]->fd);
        on_wake();
    });
}

// Accept thread. Another process sat out for this one with connections
// queued: take them now (the kernel may have woken only that process), or
// end a pause early (the other process got ahead while this one sat out).
void balanced_placement::on_wake() {
    for (std::size_t a = 0; a < points_.size(); ++a) {
        auto& point = *points_[a];
        if (point.sitting) {
            const auto s = *std::exchange(point.sitting, std::nullopt);
            point.pause.cancel();
            after_pause(a, s.pauses, s.watch);
        } else {
            on_readable(a);
        }
    }
}

int balanced_placement::choose() noexcept {
    const unsigned n = static_cast<unsigned>(slots_.size());
    int best = -1;
    std::uint64_t best_live = std::numeric_limits<std::uint64_t>::max();
    for (unsigned k = 0; k < n; ++k) {
        const unsigned r = (next_ + k) % n;
        const auto& slot = *slots_[r];
        if (slot.inboxes.front()->refusing()) continue;
        const std::uint64_t live = slot.live();
        if (live < best_live) {
            best = static_cast<int>(r);
            best_live = live;
        }
    }
    if (best < 0 || best_live >= limit_) return -1;
    next_ = (static_cast<unsigned>(best) + 1) % n;
    return best;
}

// Accept thread. Announce the pause, then look again: a reactor that closed
// a connection before the announcement is seen here, one that closes after
// it sees the announcement and wakes this thread (its engine asks for a
// connection, and the inbox's demand hook posts here). Both sides use
// sequentially consistent operations, so one of them always sees the other.
void balanced_placement::resume_if_room() {
    if (stopped_) return;
    paused_.store(true, std::memory_order_seq_cst);
    if (choose() < 0) {
        publish();  // takes nothing now: no other process waits for it
        return;
    }
    paused_.store(false, std::memory_order_seq_cst);
    for (std::size_t a = 0; a < points_.size(); ++a) arm(a);
}

void balanced_placement::stop_placing() noexcept {
    // A drain and a hard stop may both ask, from two threads.
    std::lock_guard lock(stop_mutex_);
    if (!thread_.joinable()) {
        stopped_ = true;
        return;
    }
    // The accept thread's own state is changed only on that thread.
    asio::post(*io_, [this] {
        stopped_ = true;
        for (auto& p : points_) {
            error_code ec;
            p->acceptor.cancel(ec);
            p->retry.cancel();
            p->pause.cancel();
        }
        for (auto& w : wakes_) {
            error_code ec;
            w->descriptor.cancel(ec);
        }
        // Takes no connection any more: the other processes wait for none.
        for (unsigned r = 0; r < slots_.size(); ++r) share_.withdraw(r);
        io_->stop();
    });
    thread_.join();
}

void balanced_placement::close() noexcept {
    // The acceptors only watched the sockets: release before closing once.
    for (auto& p : points_) {
        error_code ec;
        (void)p->acceptor.release(ec);
    }
    points_.clear();
    // The wakes belong to the supervisor's table: watched, never closed here.
    for (auto& w : wakes_) (void)w->descriptor.release();
    wakes_.clear();
    io_.reset();
    for (int fd : fds_) ::close(fd);
    fds_.clear();
}

std::vector<std::uint64_t> balanced_placement::live_counts() const {
    std::vector<std::uint64_t> out;
    for (const auto& s : slots_) out.push_back(s->live());
    return out;
}

}  // namespace m0::scheduler_balanced
