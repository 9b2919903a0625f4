#pragma once
// The two m0::listener strategies (docs/architecture.md):
//  * reuseport_listener — this worker's own SO_REUSEPORT socket, watched by
//    the worker's io_context like any acceptor.
//  * shared_listener — one socket for all workers. Each worker watches it
//    through a private epoll fd registered with EPOLLEXCLUSIVE, so one worker
//    is woken per connection instead of all of them; Asio cannot set that
//    flag, so the private epoll fd is what the io_context watches.
#include <memory>

#include <boost/asio/io_context.hpp>

#include <m0/reactor.hpp>

namespace m0 {

class worker_listener : public listener {
public:
    // Cancels a pending accept (its handler gets operation_aborted) and
    // refuses further ones. Worker thread only.
    virtual void cancel() = 0;
};

// Takes ownership of a listening fd made for this worker only.
std::unique_ptr<worker_listener> make_reuseport_listener(boost::asio::io_context& io, int fd);
// Borrows `shared_fd` (owned by the scheduler, shared by every worker).
// `exclusive` false: plain registration (kernels without EPOLLEXCLUSIVE);
// losers of the race then see EAGAIN and wait again.
std::unique_ptr<worker_listener> make_shared_listener(boost::asio::io_context& io, int shared_fd, bool exclusive);

// Whether this kernel accepts EPOLLEXCLUSIVE.
bool epoll_exclusive_supported();

}  // namespace m0
