#include "scheduler/worker_listeners.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

namespace m0 {
namespace {

using boost::asio::ip::tcp;
using boost::system::error_code;

tcp protocol_of(int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
}

class reuseport_listener final : public worker_listener {
public:
    reuseport_listener(boost::asio::io_context& io, int fd) : acceptor_(io, protocol_of(fd), fd) {}

    void async_accept(accept_handler handler) override {
        if (cancelled_) {
            auto ex = acceptor_.get_executor();
            boost::asio::post(ex, [h = std::move(handler), ex]() mutable {
                h(boost::asio::error::operation_aborted, tcp::socket(ex));
            });
            return;
        }
        acceptor_.async_accept([h = std::move(handler)](error_code ec, tcp::socket s) mutable { h(ec, std::move(s)); });
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

class shared_listener final : public worker_listener {
public:
    shared_listener(boost::asio::io_context& io, int shared_fd, bool exclusive)
        : io_(io), listen_fd_(shared_fd), epoll_(io), protocol_(protocol_of(shared_fd)) {
        int epfd = ::epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0) throw boost::system::system_error(error_code(errno, boost::system::system_category()), "epoll_create1");
        epoll_event ev{};
        ev.events = EPOLLIN | (exclusive ? EPOLLEXCLUSIVE : 0u);
        ev.data.fd = listen_fd_;
        if (::epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
            int err = errno;
            ::close(epfd);
            throw boost::system::system_error(error_code(err, boost::system::system_category()), "epoll_ctl(listener)");
        }
        epoll_.assign(epfd);
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

    tcp::endpoint local_endpoint() const override {
        tcp::endpoint ep;
        socklen_t len = static_cast<socklen_t>(ep.capacity());
        if (::getsockname(listen_fd_, ep.data(), &len) == 0) ep.resize(len);
        return ep;
    }

    void cancel() override {
        cancelled_ = true;
        error_code ec;
        epoll_.cancel(ec);
    }

private:
    void try_accept() {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
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
            // Another worker won this connection, or none is queued yet.
            epoll_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](error_code ec) {
                if (ec || cancelled_) {
                    deliver(ec ? ec : boost::asio::error::operation_aborted, tcp::socket(io_));
                    return;
                }
                // Consume the readiness of the private epoll fd, then race for it.
                epoll_event ev;
                ::epoll_wait(epoll_.native_handle(), &ev, 1, 0);
                try_accept();
            });
            return;
        }
        boost::asio::post(io_, [this, err] { deliver(error_code(err, boost::system::system_category()), tcp::socket(io_)); });
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
    accept_handler handler_;
    bool cancelled_ = false;
};

}  // namespace

std::unique_ptr<worker_listener> make_reuseport_listener(boost::asio::io_context& io, int fd) {
    return std::make_unique<reuseport_listener>(io, fd);
}

std::unique_ptr<worker_listener> make_shared_listener(boost::asio::io_context& io, int shared_fd, bool exclusive) {
    return std::make_unique<shared_listener>(io, shared_fd, exclusive);
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

}  // namespace m0
