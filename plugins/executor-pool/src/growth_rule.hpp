#pragma once
// The rule of `growth: blocked`: how many threads to add after one window of
// measurement. A pure function, so that tests feed it synthetic samples.
#include <cstdint>

namespace m0::pool {

// The pool's total demand (pool_governor.cpp, demand_probe.hpp) at or above
// which the GIL (or the cores) counts as saturated: one more thread would
// only queue for it. Below 1 because a window's measurement is noisy (GIL
// hand-offs leave gaps in which no thread runs, a thread that just started
// a job has not run yet) and one grown thread too many under CPU load is
// the convoy this rule exists to avoid.
inline constexpr double saturated_demand = 0.75;

// A busy thread whose demand in the window was below this (of a core) ran
// little: blocked on I/O, a lock or the GIL (threads_blocked in stats).
inline constexpr double blocked_thread_demand = 0.1;

struct growth_sample {
    double demand = 0;        // Σ over the pool's threads of Δ(on CPU + runnable) / Δt
    unsigned busy = 0;        // threads inside a job at the window's end
    unsigned live = 0;        // threads alive
    unsigned max = 0;         // max_threads
    std::uint64_t queued = 0; // jobs waiting for a thread at the window's end
    // Jobs waited and no thread was idle through the whole window (no thread
    // parked during it): a pool that had a moment with nothing to do has no
    // use for another thread.
    bool sustained = false;
};

// 0 when the pool must not grow: no sustained pressure, no job waiting, at
// the bound, or its threads already use the GIL's worth of demand. Else as
// many threads as jobs wait, as the GIL has room for at the threads'
// average demand ((saturated_demand - demand) / (demand / busy)) and as the
// bound allows; at least one.
unsigned threads_to_add(const growth_sample& s) noexcept;

}  // namespace m0::pool
