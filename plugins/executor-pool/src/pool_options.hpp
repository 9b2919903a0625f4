#pragma once
// The pool's settings, parsed from `executor.pool` (pool_config.cpp) or set
// directly by tests and benchmarks.
#include <chrono>
#include <cstddef>
#include <string_view>

namespace m0::pool {

enum class ring_kind { vyukov, lockfree, none };

const char* to_string(ring_kind kind) noexcept;

// How the pool grows beyond `threads` while jobs wait and no thread is idle.
//  eager:   at once, up to max_threads (what a user who sizes the pool
//           asks for).
//  blocked: only while its busy threads are blocked outside the
//           interpreter (I/O, sleeps, locks), as the governor measures
//           their scheduler demand; never while they compute or queue for
//           the GIL (pool_governor.cpp).
enum class growth_kind { eager, blocked };

const char* to_string(growth_kind kind) noexcept;

// The bound of `growth: blocked` when max_threads is not set: with Django's
// persistent connections one database connection per thread, and 3 serving
// processes of 32 (96) still fit PostgreSQL's default max_connections (100,
// 3 of them reserved for superusers); 32 requests may wait on I/O at once
// per process.
inline constexpr unsigned default_blocked_max_threads = 32;

struct pool_options {
    unsigned threads = 1;        // started by start(); never shrinks below
    unsigned max_threads = 1;    // grown to while jobs wait
    growth_kind growth = growth_kind::eager;
    // growth: blocked — the window over which the governor measures the
    // threads' demand before deciding (test hook, not a YAML key).
    std::chrono::nanoseconds growth_window = std::chrono::milliseconds(10);
    std::chrono::nanoseconds idle_timeout = std::chrono::seconds(30);
    // How long an idle thread polls the rings before parking. 0 (default):
    // park at once — on a small machine a spinning thread takes the core
    // the reactor needs to produce the next job.
    std::chrono::nanoseconds spin{0};
    // Pool threads run under SCHED_BATCH: a reactor's wake does not preempt
    // the reactor, so it submits the jobs it has before the pool runs them.
    bool batch_sched = true;
    // How long a reactor with jobs out polls its completion ring before it
    // announces and blocks. 0 (default): block at once — on a small machine
    // a spinning reactor takes the core its pool thread or clients need.
    std::chrono::nanoseconds reactor_spin{0};
    // Pool threads run only on the cores the reactors of this process are
    // pinned to (the union of their affinity masks, as each reports it on
    // its first pass): a job runs on the core that parsed its request, and
    // a wake is a switch on that core rather than an interrupt to another.
    // Meaningful with server.pin_cores; with unpinned reactors the union is
    // every core. `executor.pool.colocate` resolves `auto` (pool_config.cpp).
    bool colocate = false;
    ring_kind ring = ring_kind::vyukov;
    std::size_t ring_capacity = 1024;  // per lane, per direction; power of two
    std::chrono::nanoseconds max_job_age = std::chrono::microseconds(200);
    // Test hook, not a YAML key: a pause between announcing and re-checking,
    // on both sides, and between a pool thread's idle timeout and its claim
    // on its own word, to widen the windows the wake tests probe.
    std::chrono::nanoseconds test_park_window{0};
};

inline constexpr unsigned max_pool_threads = 256;
// Slots beyond max_threads for threads written off at a request deadline,
// which keep theirs until they return (server.max_written_off is at most 64).
inline constexpr unsigned written_off_slots = 64;
inline constexpr std::size_t max_lanes = 256;

}  // namespace m0::pool
