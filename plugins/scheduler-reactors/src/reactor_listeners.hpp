#pragma once
// The two listener strategies of the `reactors` scheduler:
//  * reuseport_listener — this reactor's own SO_REUSEPORT socket, watched by
//    the reactor's io_context like any acceptor; the kernel hashes each
//    connection to one of the sockets.
//  * shared_listener — one socket for all reactors. Each reactor watches it
//    through a private epoll fd registered with EPOLLEXCLUSIVE, so one reactor
//    is woken per connection instead of all of them; Asio cannot set that
//    flag, so the private epoll fd is what the io_context watches.
#include <chrono>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>

#include <m0/reactors/deployment_share.hpp>
#include <m0/reactors/reactor_group.hpp>
#include <m0/scheduler.hpp>

namespace m0::scheduler_reactors {

// Takes ownership of a listening fd made for this reactor only.
std::unique_ptr<reactors::reactor_listener> make_reuseport_listener(boost::asio::io_context& io, int fd);

// The live connections of every reactor sharing a listener, so that each
// can tell whether it is ahead of the others. Filled before the reactors run.
struct shared_listener_peers {
    std::vector<const reactor_stats*> stats;  // per reactor of this process
    std::vector<std::uint64_t> closed_before;  // per reactor: its stats' `closed` when its listeners were made
    // Per reactor: connections its listeners accepted. The engine starts a
    // burst of accepted connections together, so its live count lags what
    // a reactor took by up to a burst: the open count is this minus what
    // the engine closed since (open_on).
    std::unique_ptr<std::atomic<std::uint64_t>[]> taken = std::make_unique<std::atomic<std::uint64_t>[]>(max_reactors);
    // Per reactor: its listener waits for a connection now (its thread is not
    // busy elsewhere, so it will take what arrives).
    std::unique_ptr<std::atomic<bool>[]> waiting = std::make_unique<std::atomic<bool>[]>(max_reactors);
    // The other serving processes' reactors, when the processes of a prefork
    // deployment share the socket (inactive otherwise): each listener
    // publishes its reactor's count and waiting there, and looks at the
    // others as at its own process's reactors, so that a burst is shared out
    // over every process (the kernel's wake-ups favour whichever process is
    // running, as they favour a running reactor).
    reactors::deployment_share deployment;

    // Reactor r's open connections, those accepted and not yet started included.
    std::uint64_t open_on(std::size_t r) const noexcept {
        const auto took = taken[r].load(std::memory_order_relaxed);  // first: closes only follow what was taken
        const auto closed = stats[r]->closed.load(std::memory_order_relaxed) - closed_before[r];
        return took > closed ? took - closed : 0;
    }
};

// Borrows `shared_fd` (owned by the placement, shared by every reactor).
// `exclusive` false: plain registration (kernels without EPOLLEXCLUSIVE);
// losers of the race then see EAGAIN and wait again. `reactor`: this
// listener's reactor among `peers`.
std::unique_ptr<reactors::reactor_listener> make_shared_listener(boost::asio::io_context& io, int shared_fd,
                                                                 bool exclusive,
                                                                 std::shared_ptr<const shared_listener_peers> peers,
                                                                 unsigned reactor);

// Whether this kernel accepts EPOLLEXCLUSIVE.
bool epoll_exclusive_supported();

// Sharing out a burst. Left to the kernel, a burst piles onto the reactor
// that happens to be running: Asio watches each reactor's private epoll,
// which makes EPOLLEXCLUSIVE wake every reactor for each arrival, and the
// one already awake gets to accept(2) first (nginx re-arms its listener for
// the same pile-up). So before each accept a reactor compares its open
// connections with the least loaded reactor's (of every process sharing the
// socket) and sits out, its registration removed, in pauses of
// reactors::share_pause while it is ahead:
//  * while the least loaded reactor waits for a connection (its engine asked
//    for one), as the deployment_share constants say: ahead at all when it
//    can wake that reactor through its entry's wake (the connections queued
//    now are left to it, and the kernel may have woken only this one), more
//    than one ahead when it cannot (one process, no table); up to 100 ms, and
//    not for a reactor that stalls;
//  * else (that reactor is busy: it may be in a long handler, and must not
//    stop the others from accepting), only after shared_accepts_per_turn
//    accepts in a row, when more than shared_lead_allowed ahead, for at most
//    shared_max_pauses pauses: it takes its next turn also when the others
//    did not catch up.
inline constexpr unsigned shared_accepts_per_turn = 4;
inline constexpr std::uint64_t shared_lead_allowed = 2;
inline constexpr unsigned shared_max_pauses = 8;

}  // namespace m0::scheduler_reactors
