#include "balanced_placement.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
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
    if (point.armed || stopped_) return;
    point.armed = true;
    publish(true);
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
    publish(false);
    for (int n = 0; n < max_accepts_per_wake; ++n) {
        const int target = choose();
        if (target < 0) {
            resume_if_room();  // pauses, unless a connection closed meanwhile
            return;
        }
        std::uint64_t others = 0;
        if (!std::exchange(turn_owed_, false) && ahead_of_an_idle_process(target, others)) {
            sit_out(a, 0, reactors::stall_watch(others));
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
        if (share_.active()) share_.publish(static_cast<unsigned>(target), slot.live(), false);
    }
    arm(a);
}

void balanced_placement::publish(bool waiting) noexcept {
    if (!share_.active()) return;
    for (unsigned r = 0; r < slots_.size(); ++r) share_.publish(r, slots_[r]->live(), waiting);
}

bool balanced_placement::ahead_of_an_idle_process(int target, std::uint64_t& others) const {
    if (!share_.active() || std::chrono::steady_clock::now() < distrust_waiting_until_) return false;
    reactors::least_loaded least;
    share_.consider_others(least);
    others = least.total;
    return least.waits && slots_[static_cast<unsigned>(target)]->live() > least.open + reactors::share_lead_allowed;
}

// Accept thread. The acceptor stays disarmed while this process sits out
// (deployment_share.hpp), so the other processes' accept threads take what
// arrives; this one looks again after each pause.
void balanced_placement::sit_out(std::size_t a, unsigned pauses, reactors::stall_watch watch) {
    publish(false);
    auto& pause = points_[a]->pause;
    pause.expires_after(reactors::share_pause);
    pause.async_wait([this, a, pauses, watch](const error_code& ec) mutable {
        if (ec || stopped_) return;
        const int target = choose();
        std::uint64_t others = 0;
        const bool ahead = target >= 0 && ahead_of_an_idle_process(target, others);
        if (ahead && watch.stalled(others, true, points_[a]->acceptor.native_handle())) {
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
    });
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
    if (choose() < 0) return;
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
