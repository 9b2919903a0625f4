#pragma once
// How the `balanced` scheduler's connections reach its reactors: one accept
// thread takes every connection of the process and places it on the reactor
// with the fewest live connections (ties rotate), where the reactor's engine
// takes it from a handoff listener. A reactor's live count is what was placed
// on it minus what its engine closed since, so it is exact at each placement:
// at every moment of a burst the counts differ by at most one.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/reactors/deployment_share.hpp>
#include <m0/reactors/reactor_group.hpp>
#include <m0/scheduler.hpp>

#include "handoff_listener.hpp"

namespace m0::scheduler_balanced {

class balanced_placement final : public reactors::connection_placement {
public:
    explicit balanced_placement(listener_strategy strategy);
    ~balanced_placement() override;

    std::vector<boost::asio::ip::tcp::endpoint> open(scheduler_options& options) override;
    std::vector<std::unique_ptr<reactors::reactor_listener>> listeners_for(unsigned reactor,
                                                                           boost::asio::io_context& io,
                                                                           reactor_stats& stats) override;
    void reactors_started() override;
    void stop_placing() noexcept override;
    void close() noexcept override;

    // Live connections of each reactor as the accept thread counts them
    // (for tests and the placement's own checks); any thread.
    std::vector<std::uint64_t> live_counts() const;

private:
    struct reactor_slot {
        reactor_stats* stats = nullptr;
        std::uint64_t closed_at_start = 0;  // a metrics slot outlives the processes that use it
        std::atomic<std::uint64_t> placed{0};
        std::vector<std::shared_ptr<handoff_inbox>> inboxes;  // per address
        std::uint64_t live() const noexcept;
    };
    struct accept_point;

    struct wake_watch;

    void arm(std::size_t address);
    void on_readable(std::size_t address);
    // Processes sharing the socket (share_ active): shows every reactor's
    // live count, and that this process waits for connections: always, but
    // while every reactor is full. Not only while the acceptor is armed: an
    // accept thread preempted between a readiness and its accept would
    // otherwise look busy, and the other process would take every arrival
    // meanwhile instead of sitting out (a stalled one is caught by the stall
    // rule, deployment_share.hpp).
    void publish() noexcept;
    // Whether to leave the next connection to another process's idle
    // reactor (`least`, the least loaded of theirs): this process's least
    // loaded reactor (`target`) is ahead of it by more than the lead allowed
    // (deployment_share.hpp).
    bool ahead_of_an_idle_process(int target, reactors::least_loaded& least) const;
    void sit_out(std::size_t address, unsigned pauses, reactors::stall_watch watch);
    // The end of a pause (its timer, or a wake that cuts it short).
    void after_pause(std::size_t address, unsigned pauses, reactors::stall_watch watch);
    // Another process's accept thread (sitting out while connections are
    // queued) wrote the wake of one of this process's reactors' entries.
    void arm_wake(std::size_t watch);
    void on_wake();
    // The reactor to place the next connection on: fewest live, ties taken
    // in turn; -1 when every reactor is at the connection limit (or refusing).
    int choose() noexcept;
    void resume_if_room();

    listener_strategy strategy_;
    std::uint64_t limit_ = 0;  // http.max_connections_per_reactor
    std::vector<int> fds_;     // the accept sockets, per address
    std::vector<boost::asio::ip::tcp::endpoint> bound_;
    std::vector<std::unique_ptr<reactor_slot>> slots_;
    unsigned next_ = 0;  // where the search for the least loaded starts (rotates ties)
    std::unique_ptr<boost::asio::io_context> io_;  // the accept thread's
    std::vector<std::unique_ptr<accept_point>> points_;
    std::vector<std::unique_ptr<wake_watch>> wakes_;  // one per reactor entry with a wake
    // Set while every reactor is full: a reactor whose engine asks for a
    // connection again then wakes the accept thread (see resume_if_room).
    std::atomic<bool> paused_{false};
    // The other serving processes sharing the socket (inactive otherwise),
    // and, on the accept thread, the state of sharing out with them: a
    // sit-out just ended (the next connection is this process's), and until
    // when a process that says it waits but took nothing is not waited for.
    reactors::deployment_share share_;
    bool turn_owed_ = false;
    std::chrono::steady_clock::time_point distrust_waiting_until_{};
    std::thread thread_;
    std::mutex stop_mutex_;  // stop_placing() from a drain and a hard stop at once
    bool stopped_ = false;
};

}  // namespace m0::scheduler_balanced
