#include "reactor_listeners.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <m0/listen_socket.hpp>

namespace m0::scheduler_reactors {
namespace {

using boost::asio::ip::tcp;
using boost::system::error_code;

class reuseport_listener final : public reactors::reactor_listener {
public:
    reuseport_listener(boost::asio::io_context& io, int fd) : acceptor_(io, socket_protocol(fd), fd) {}

    void async_accept(accept_handler handler) override {
        if (cancelled_) {
            auto ex = acceptor_.get_executor();
            boost::asio::post(ex, [h = std::move(handler), ex]() mutable {
                h(boost::asio::error::operation_aborted, tcp::socket(ex));
            });
            return;
        }
        acceptor_.async_accept([h = std::move(handler)](error_code ec, tcp::socket s) mutable {
            // Asio accepts with accept(2): close-on-exec is set here, so a
            // program the application starts (os.system, a subprocess that
            // keeps its parent's descriptors) never holds a client's
            // connection open after m0 has closed it.
            if (!ec) ::fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);
            h(ec, std::move(s));
        });
    }

    tcp::endpoint local_endpoint() const override {
        error_code ec;
        return acceptor_.local_endpoint(ec);
    }

    void cancel() override {
        cancelled_ = true;
        error_code ec;
        acceptor_.cancel(ec);
    }

private:
    tcp::acceptor acceptor_;
    bool cancelled_ = false;
};

class shared_listener final : public reactors::reactor_listener {
public:
    shared_listener(boost::asio::io_context& io, int shared_fd, bool exclusive,
                    std::shared_ptr<const shared_listener_peers> peers, unsigned reactor)
        : io_(io), listen_fd_(shared_fd), epoll_(io), protocol_(socket_protocol(shared_fd)), exclusive_(exclusive),
          pause_(io), peers_(std::move(peers)), reactor_(reactor) {
        int epfd = ::epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0) throw boost::system::system_error(error_code(errno, boost::system::system_category()), "epoll_create1");
        epoll_.assign(epfd);
        register_listener(EPOLL_CTL_ADD);
        // Its entry's wake, in the same epoll: a reactor of another process
        // (or of this one) that sits out while connections are queued wakes
        // this one to take them, which no arrival may do (the kernel woke
        // the one that sits out).
        if (peers_ && (wake_fd_ = peers_->deployment.wake_fd(reactor_)) >= 0) {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = wake_fd_;
            if (::epoll_ctl(epfd, EPOLL_CTL_ADD, wake_fd_, &ev) != 0)
                throw boost::system::system_error(error_code(errno, boost::system::system_category()), "epoll_ctl(wake)");
        }
    }

    void async_accept(accept_handler handler) override {
        if (cancelled_) {
            boost::asio::post(io_, [h = std::move(handler), this]() mutable {
                h(boost::asio::error::operation_aborted, tcp::socket(io_));
            });
            return;
        }
        handler_ = std::move(handler);
        try_accept();
    }

    // A Unix socket's: 0.0.0.0:0 (the engine then asks each connection).
    tcp::endpoint local_endpoint() const override { return bound_endpoint(listen_fd_); }

    void cancel() override {
        cancelled_ = true;
        error_code ec;
        epoll_.cancel(ec);
        pause_.cancel();
        withdraw();
    }

    ~shared_listener() override { withdraw(); }

private:
    // This reactor's entry in the deployment's table: its open count (the
    // other processes compare theirs with it) and whether it waits.
    void publish(bool waiting) noexcept {
        if (peers_ && !cancelled_) peers_->deployment.publish(reactor_, peers_->open_on(reactor_), waiting);
    }
    // Draining or gone: takes no connection, so no process waits for it.
    void withdraw() noexcept {
        if (peers_) peers_->deployment.withdraw(reactor_);
    }

    void register_listener(int op) {
        epoll_event ev{};
        ev.events = EPOLLIN | (exclusive_ ? EPOLLEXCLUSIVE : 0u);
        ev.data.fd = listen_fd_;
        if (::epoll_ctl(epoll_.native_handle(), op, listen_fd_, op == EPOLL_CTL_DEL ? nullptr : &ev) != 0)
            throw boost::system::system_error(error_code(errno, boost::system::system_category()), "epoll_ctl(listener)");
    }

    void try_accept() {
        // Asked for a connection: it takes the next one unless it is ahead
        // (also while it sits out for an idle reactor, so that one that gets
        // ahead of it meanwhile leaves arrivals to it in turn).
        publish(true);
        const standing now = turn_owed_ || !peers_ ? standing{} : look();
        if (pauses_allowed(now) > 0) {
            // Sit out (reactor_listeners.hpp): registration removed, so
            // arrivals wake the others; registered again after the pause,
            // it finds at once any connection nobody took.
            try {
                register_listener(EPOLL_CTL_DEL);
            } catch (const boost::system::system_error& e) {
                boost::asio::post(io_, [this, ec = e.code()] { deliver(ec, tcp::socket(io_)); });
                return;
            }
            // What is queued now is left to the idle one, which the kernel
            // may not have woken (it woke this one, and nothing else arrives).
            if (now.others.waits && reactors::connections_queued(listen_fd_))
                reactors::deployment_share::wake(now.others.wake_fd);
            sit_out(0, reactors::stall_watch(now.others.total));
            return;
        }
        if (accepted_this_turn_ >= shared_accepts_per_turn) accepted_this_turn_ = 0;
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            turn_owed_ = false;
            ++accepted_this_turn_;
            if (peers_) peers_->taken[reactor_].fetch_add(1, std::memory_order_relaxed);
            publish(false);  // until the engine asks for the next one
            // Completed like an Asio accept: posted, never inside the
            // async_accept call, so a caller that accepts again from its
            // handler does not recurse once per queued connection.
            boost::asio::post(io_, [this, s = tcp::socket(io_, protocol_, fd)]() mutable {
                deliver(error_code{}, std::move(s));
            });
            return;
        }
        int err = errno;
        if (err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED || err == EINTR) {
            // Another reactor won this connection, or none is queued yet.
            // The turn goes on: a reactor that takes each connection as it
            // arrives would otherwise never reach its turn's end.
            wait_for_connection();
            return;
        }
        boost::asio::post(io_, [this, err] { deliver(error_code(err, boost::system::system_category()), tcp::socket(io_)); });
    }

    // Where this reactor stands against the others sharing the socket.
    struct standing {
        std::uint64_t own = 0;
        reactors::least_loaded others;  // every other reactor, this process's and the others'
    };

    standing look() const {
        standing s;
        for (std::size_t r = 0; r < peers_->stats.size(); ++r)
            if (r != reactor_)
                s.others.consider(peers_->open_on(r), peers_->waiting[r].load(std::memory_order_relaxed),
                                  peers_->deployment.wake_fd(static_cast<unsigned>(r)));
        peers_->deployment.consider_others(s.others);
        s.own = peers_->open_on(reactor_);
        if (std::chrono::steady_clock::now() < distrust_waiting_until_) s.others.waits = false;
        return s;
    }

    // How many pauses this reactor may sit out now (reactor_listeners.hpp):
    // 0 when it is not ahead of the least loaded reactor.
    unsigned pauses_allowed(const standing& s) const {
        const reactors::least_loaded& least = s.others;
        if (!least.any()) return 0;
        if (least.waits) {
            const auto lead = least.wake_fd >= 0 ? reactors::share_lead_allowed_waking : reactors::share_lead_allowed;
            return s.own > least.open + lead ? reactors::share_max_pauses : 0;
        }
        return accepted_this_turn_ >= shared_accepts_per_turn && s.own > least.open + shared_lead_allowed
                   ? shared_max_pauses
                   : 0;
    }

    void sit_out(unsigned pauses, reactors::stall_watch watch) {
        pause_.expires_after(reactors::share_pause);
        pause_.async_wait([this, pauses, watch](error_code ec) mutable {
            if (ec || cancelled_) {
                deliver(ec ? ec : boost::asio::error::operation_aborted, tcp::socket(io_));
                return;
            }
            const standing now = look();
            if (watch.stalled(now.others.total, now.others.waits, listen_fd_)) {
                // It says it waits but takes nothing (a stopped process, a
                // thread without a CPU): not waited for for a while.
                distrust_waiting_until_ = std::chrono::steady_clock::now() + reactors::share_distrust_stalled;
            } else if (pauses + 1 < pauses_allowed(now)) {
                sit_out(pauses + 1, watch);
                return;
            }
            // This reactor's turn: at least one accept before it looks again,
            // so that one that stays ahead still takes its share.
            accepted_this_turn_ = 0;
            turn_owed_ = true;
            try {
                register_listener(EPOLL_CTL_ADD);
            } catch (const boost::system::system_error& e) {
                deliver(e.code(), tcp::socket(io_));
                return;
            }
            try_accept();
        });
    }

    void wait_for_connection() {
        if (peers_) peers_->waiting[reactor_].store(true, std::memory_order_relaxed);
        publish(true);
        // A wake that came while this listener did not wait (sitting out,
        // accepting) left the private epoll readable without a new edge for
        // the reactor's own epoll: taken now, or it would wait for the next
        // arrival.
        if (wake_fd_ >= 0 && consume_ready()) {
            boost::asio::post(io_, [this] { on_ready(error_code{}); });
            return;
        }
        epoll_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](error_code ec) {
            consume_ready();
            on_ready(ec);
        });
    }

    void on_ready(error_code ec) {
        if (peers_) peers_->waiting[reactor_].store(false, std::memory_order_relaxed);
        if (ec || cancelled_) {
            deliver(ec ? ec : boost::asio::error::operation_aborted, tcp::socket(io_));
            return;
        }
        try_accept();
    }

    // Consumes the private epoll's readiness (and a wake, which stays
    // readable until read); whether it held a wake.
    bool consume_ready() noexcept {
        epoll_event ev[2];
        const int n = ::epoll_wait(epoll_.native_handle(), ev, 2, 0);
        bool woken = false;
        for (int i = 0; i < n; ++i) {
            if (ev[i].data.fd == wake_fd_ && wake_fd_ >= 0) {
                reactors::deployment_share::consume_wake(wake_fd_);
                woken = true;
            }
        }
        return woken;
    }

    void deliver(error_code ec, tcp::socket s) {
        auto h = std::move(handler_);
        handler_ = nullptr;
        if (h) h(ec, std::move(s));
    }

    boost::asio::io_context& io_;
    int listen_fd_;
    boost::asio::posix::stream_descriptor epoll_;
    tcp protocol_;
    const bool exclusive_;
    boost::asio::steady_timer pause_;
    std::shared_ptr<const shared_listener_peers> peers_;
    const unsigned reactor_;
    int wake_fd_ = -1;  // this reactor's entry's wake (deployment_share), in epoll_
    accept_handler handler_;
    bool cancelled_ = false;
    unsigned accepted_this_turn_ = 0;
    bool turn_owed_ = false;  // a sit-out ended: the next connection is this reactor's
    std::chrono::steady_clock::time_point distrust_waiting_until_{};
};

}  // namespace

std::unique_ptr<reactors::reactor_listener> make_reuseport_listener(boost::asio::io_context& io, int fd) {
    return std::make_unique<reuseport_listener>(io, fd);
}

std::unique_ptr<reactors::reactor_listener> make_shared_listener(boost::asio::io_context& io, int shared_fd,
                                                                 bool exclusive,
                                                                 std::shared_ptr<const shared_listener_peers> peers,
                                                                 unsigned reactor) {
    return std::make_unique<shared_listener>(io, shared_fd, exclusive, std::move(peers), reactor);
}

bool epoll_exclusive_supported() {
    int epfd = ::epoll_create1(EPOLL_CLOEXEC);
    int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok = false;
    if (epfd >= 0 && probe >= 0) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLEXCLUSIVE;
        ok = ::epoll_ctl(epfd, EPOLL_CTL_ADD, probe, &ev) == 0;
    }
    if (probe >= 0) ::close(probe);
    if (epfd >= 0) ::close(epfd);
    return ok;
}

}  // namespace m0::scheduler_reactors
