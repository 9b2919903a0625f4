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

#include <m0/reactors/reactor_group.hpp>

namespace m0::scheduler_reactors {

// Takes ownership of a listening fd made for this reactor only.
std::unique_ptr<reactors::reactor_listener> make_reuseport_listener(boost::asio::io_context& io, int fd);

// The live connections of every reactor sharing a listener, so that each
// can tell whether it is ahead of the others. Filled before the reactors run.
struct shared_listener_peers {
    std::vector<const reactor_stats*> stats;  // per reactor
    // Per reactor: its listener waits for a connection now (its thread is not
    // busy elsewhere, so it will take what arrives).
    std::unique_ptr<std::atomic<bool>[]> waiting = std::make_unique<std::atomic<bool>[]>(max_reactors);
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

// Sharing out a burst. A reactor takes at most shared_accepts_per_turn
// connections from a shared listener in a row. Then, if it holds more than
// shared_lead_allowed connections more than the least loaded reactor, it
// sits out, its registration removed, for up to shared_max_pauses pauses of
// shared_turn_pause while the others catch up, and takes its next turn
// (also when they did not: a reactor blocked in a long handler must not stop
// the others from accepting) — or, while the least loaded reactor is waiting
// for a connection (so it will take the queued ones as soon as its thread
// runs), for up to shared_max_pauses_for_a_waiting_peer. Without this the reactor that happens to be
// running wins every race for a burst: Asio watches each reactor's private
// epoll, which makes EPOLLEXCLUSIVE wake every reactor for each arrival, and
// the one already awake gets to accept(2) first (nginx re-arms its listener
// for the same pile-up).
inline constexpr unsigned shared_accepts_per_turn = 4;
inline constexpr std::uint64_t shared_lead_allowed = 2;
inline constexpr std::chrono::microseconds shared_turn_pause{500};
inline constexpr unsigned shared_max_pauses = 8;
inline constexpr unsigned shared_max_pauses_for_a_waiting_peer = 200;

}  // namespace m0::scheduler_reactors
