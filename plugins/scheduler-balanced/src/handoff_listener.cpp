#include "handoff_listener.hpp"

#include <unistd.h>

#include <m0/listen_socket.hpp>

#include <boost/asio/post.hpp>

namespace m0::scheduler_balanced {

namespace asio = boost::asio;
using boost::asio::ip::tcp;
using boost::system::error_code;

handoff_inbox::~handoff_inbox() {
    for (int fd : fds_) ::close(fd);
}

void handoff_inbox::put(int fd) {
    bool was_empty;
    {
        std::lock_guard lock(mutex_);
        was_empty = fds_.empty();
        fds_.push_back(fd);
    }
    // The reactor takes every fd queued when it runs the arrival, so only
    // the first of a batch needs to wake it. `arrival_` is set before the
    // accept thread starts and never changed.
    if (was_empty) asio::post(io_, arrival_);
}

int handoff_inbox::take() {
    std::lock_guard lock(mutex_);
    if (fds_.empty()) return -1;
    const int fd = fds_.front();
    fds_.pop_front();
    return fd;
}

namespace {

class handoff_listener final : public reactors::reactor_listener {
public:
    explicit handoff_listener(std::shared_ptr<handoff_inbox> inbox) : inbox_(std::move(inbox)) {
        inbox_->on_arrival([alive = std::weak_ptr<handoff_listener*>(self_)] {
            if (auto self = alive.lock()) (*self)->deliver();
        });
    }
    ~handoff_listener() override { inbox_->refuse(); }

    void async_accept(accept_handler handler) override {
        handler_ = std::move(handler);
        inbox_->demand();
        // Answered from the io_context, never inside this call, like an Asio
        // accept: a caller that accepts again from its handler must not
        // recurse once per queued connection.
        asio::post(inbox_->io(), [alive = std::weak_ptr<handoff_listener*>(self_)] {
            if (auto self = alive.lock()) (*self)->deliver();
        });
    }

    boost::asio::ip::tcp::endpoint local_endpoint() const override { return inbox_->local_endpoint(); }

    // The accept thread has stopped placing before any reactor cancels its
    // listeners, so the inbox holds all that will ever arrive: connections
    // placed here are still handed to the engine, which answers them as it
    // drains; only then does a pending accept fail with operation_aborted.
    void cancel() override {
        cancelled_ = true;
        inbox_->refuse();
        asio::post(inbox_->io(), [alive = std::weak_ptr<handoff_listener*>(self_)] {
            if (auto self = alive.lock()) (*self)->deliver();
        });
    }

private:
    void deliver() {
        if (!handler_) return;
        const int fd = inbox_->take();
        if (fd >= 0) {
            auto h = std::move(handler_);
            handler_ = nullptr;
            error_code ec;
            tcp::socket socket(inbox_->io());
            socket.assign(socket_protocol(fd), fd, ec);
            if (ec) ::close(fd);
            h(ec, std::move(socket));
        } else if (cancelled_) {
            auto h = std::move(handler_);
            handler_ = nullptr;
            h(asio::error::operation_aborted, tcp::socket(inbox_->io()));
        }
    }

    std::shared_ptr<handoff_inbox> inbox_;
    // Work posted to the io_context holds a weak reference: a wake still
    // queued when the listener is gone (its reactor stopped) does nothing.
    std::shared_ptr<handoff_listener*> self_ = std::make_shared<handoff_listener*>(this);
    accept_handler handler_;
    bool cancelled_ = false;
};

}  // namespace

std::unique_ptr<reactors::reactor_listener> make_handoff_listener(std::shared_ptr<handoff_inbox> inbox) {
    return std::make_unique<handoff_listener>(std::move(inbox));
}

}  // namespace m0::scheduler_balanced
