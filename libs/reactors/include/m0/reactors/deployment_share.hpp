#pragma once
// One serving process's side of the deployment_load table (m0/scheduler.hpp):
// what its reactors show the other processes sharing a socket with it, and
// what it sees of theirs. Used by both of this project's schedulers to share
// a socket's connections out over every process, not only their own
// reactors: a process that is ahead of one whose reactor waits idle for a
// connection leaves the next ones to it.
#include <chrono>
#include <cstdint>

#include <m0/scheduler.hpp>

namespace m0::reactors {

// Sitting out for another process's idle reactor, as both schedulers do it:
// in pauses of share_pause, for up to share_max_pauses, as long as this
// process is more than share_lead_allowed connections ahead. A reactor that
// says it waits while connections stay queued on the socket and no other
// reactor takes one for share_stalled_pauses pauses in a row is stalled (its
// process stopped, its thread without a CPU) and is not waited for during
// share_distrust_stalled.
//
// A listener that wakes the one it sits out for (deployment_share::wake)
// allows no lead at all (share_lead_allowed_waking): two idle reactors then
// take a burst's connections in turns of one or two, as a client that goes
// round its connections in order needs (each process gets its requests
// spread out, not in runs). One that cannot wake it keeps a lead of one, so
// that the kernel's next wake-up decides.
inline constexpr std::uint64_t share_lead_allowed = 1;
inline constexpr std::uint64_t share_lead_allowed_waking = 0;
inline constexpr std::chrono::microseconds share_pause{500};
inline constexpr unsigned share_max_pauses = 200;
inline constexpr unsigned share_stalled_pauses = 8;
inline constexpr std::chrono::milliseconds share_distrust_stalled{100};

// The least loaded of a set of reactors, folded one reactor at a time: what
// a reactor (or a process's accept thread) compares itself with before it
// takes a connection.
struct least_loaded {
    std::uint64_t open = UINT64_MAX;  // its open connections; UINT64_MAX: none considered
    bool waits = false;               // it waits for a connection (on a tie, the one that waits)
    int wake_fd = -1;                 // what wakes its listener (deployment_share::wake); -1: none
    std::uint64_t total = 0;          // the open connections of all of them together

    bool any() const noexcept { return open != UINT64_MAX; }
    void consider(std::uint64_t reactor_open, bool reactor_waits, int reactor_wake_fd = -1) noexcept {
        total += reactor_open;
        if (reactor_open < open || (reactor_open == open && reactor_waits))
            open = reactor_open, waits = reactor_waits, wake_fd = reactor_wake_fd;
    }
};

class deployment_share {
public:
    deployment_share() = default;
    explicit deployment_share(deployment_load load);

    bool active() const noexcept { return load_.table != nullptr; }

    // Shows reactor `reactor` of this process: its open connections and
    // whether it waits for one. Nothing once a replacement process claimed
    // the row (it serves before this one drains).
    void publish(unsigned reactor, std::uint64_t open, bool waiting) const noexcept;
    // It takes no connection any more (draining, stopped): counts for nothing.
    void withdraw(unsigned reactor) const noexcept;

    // Folds every reactor of the other processes that takes connections
    // into `into`.
    void consider_others(least_loaded& into) const noexcept;

    // The eventfd that wakes reactor `reactor` of this process (its
    // entry's); -1 without a table.
    int wake_fd(unsigned reactor) const noexcept;
    // Wakes the listener watching `fd` (a wake_fd); nothing for -1.
    static void wake(int fd) noexcept;
    // Takes what woke a listener off `fd`, so that it wakes it only again
    // for a new wake.
    static void consume_wake(int fd) noexcept;

private:
    bool owns(const reactor_load& e) const noexcept;

    deployment_load load_;
    std::int32_t self_ = 0;
};

// Connections in a listening socket's accept queue (TCP_INFO of a listening
// socket reports its backlog as tcpi_unacked); true when it cannot tell.
bool connections_queued(int listen_fd) noexcept;

// The stall check of a sit-out (see share_stalled_pauses): fed after each
// pause with what the other reactors hold together and whether the one
// waited for still says it waits; says when to stop waiting for it.
class stall_watch {
public:
    explicit stall_watch(std::uint64_t others_before) : before_(others_before) {}
    // True once the waited-for reactor took nothing of what stays queued
    // for share_stalled_pauses pauses in a row.
    bool stalled(std::uint64_t others_now, bool still_waits, int listen_fd) noexcept {
        stalled_ = still_waits && others_now <= before_ && connections_queued(listen_fd) ? stalled_ + 1 : 0;
        before_ = others_now;
        return stalled_ >= share_stalled_pauses;
    }

private:
    std::uint64_t before_;
    unsigned stalled_ = 0;
};

}  // namespace m0::reactors
