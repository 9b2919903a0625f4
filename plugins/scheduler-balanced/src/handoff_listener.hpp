#pragma once
// A reactor's end of the balanced scheduler: connections another thread
// accepted and placed on this reactor arrive in its inbox, and the engine
// takes them with async_accept as from any listener.
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/reactors/reactor_group.hpp>

namespace m0::scheduler_balanced {

// Shared by the listener (reactor thread) and the accept thread.
class handoff_inbox {
public:
    handoff_inbox(boost::asio::io_context& io, boost::asio::ip::tcp::endpoint local) : io_(io), local_(local) {}
    ~handoff_inbox();  // closes what was never taken
    handoff_inbox(const handoff_inbox&) = delete;
    handoff_inbox& operator=(const handoff_inbox&) = delete;

    // Accept thread: queues an accepted socket's fd for the reactor, and
    // tells the reactor when the inbox was empty (one wake per batch).
    void put(int fd);
    // Reactor thread: the oldest fd, or -1.
    int take();

    boost::asio::io_context& io() noexcept { return io_; }
    const boost::asio::ip::tcp::endpoint& local_endpoint() const noexcept { return local_; }
    // Set by the listener on the reactor thread when it no longer takes
    // connections (the reactor crashed); the accept thread then places
    // nothing more here.
    bool refusing() const noexcept { return refusing_.load(std::memory_order_acquire); }
    void refuse() noexcept { refusing_.store(true, std::memory_order_release); }

    // Reactor thread: what to run when fds arrive (the listener's delivery).
    void on_arrival(std::function<void()> fn) { arrival_ = std::move(fn); }
    // Set by the placement before the reactors start: run on the reactor
    // thread each time its engine asks for a connection (admission resumes).
    void on_demand(std::function<void()> fn) { demand_ = std::move(fn); }
    void demand() const {
        if (demand_) demand_();
    }

private:
    boost::asio::io_context& io_;
    const boost::asio::ip::tcp::endpoint local_;
    std::mutex mutex_;
    std::deque<int> fds_;
    std::function<void()> arrival_;
    std::function<void()> demand_;
    std::atomic<bool> refusing_{false};
};

// The listener the engine sees on one reactor for one address.
std::unique_ptr<reactors::reactor_listener> make_handoff_listener(std::shared_ptr<handoff_inbox> inbox);

}  // namespace m0::scheduler_balanced
