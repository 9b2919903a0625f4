// growth: blocked — the governor, one thread of the pool that decides when it
// grows. Asleep while no job waits for a thread; while jobs wait and no
// thread is idle it measures, a window at a time (growth_window, 10 ms), the
// scheduler demand of every pool thread (demand_probe.hpp) and grows the
// pool by growth_rule's count: threads blocked outside the interpreter leave
// the GIL free, so more threads serve more requests; threads that compute or
// queue for the GIL add up to a core of demand, and another thread would only
// queue with them (the convoy).
#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <m0/log.hpp>

#include "growth_rule.hpp"
#include "pool_core.hpp"

namespace m0::pool {

void pool_core::open_probe(slot& s) {
    std::lock_guard lock(threads_mutex_);
    s.probe.open_for_this_thread();
}

void pool_core::close_probe_locked(slot& s) noexcept { s.probe.close(); }

void pool_core::start_governor() {
    governor_ = std::thread([this] { governor_main(); });
}

void pool_core::stop_governor() {
    if (!governor_.joinable()) return;
    {
        // Under the governor's mutex, so the wake cannot fall between its
        // check of stopping() and its wait.
        std::lock_guard lock(governor_mutex_);
    }
    governor_cv_.notify_all();
    governor_.join();
}

void pool_core::request_growth() noexcept {
    // After the push and the read of idle_ (both read-modify-writes), one
    // more on the governor's word: either it reads the governor's "asleep"
    // and wakes it, or the governor's own exchange comes after it and its
    // re-check (growth_pressure) sees the job.
    if (!governor_asleep_.exchange(false)) return;
    std::lock_guard lock(governor_mutex_);
    governor_cv_.notify_one();
}

bool pool_core::growth_pressure() const noexcept {
    return !stopping() && idle_.load() == 0 && live_.load() < options_.max_threads && queued_jobs() > 0;
}

void pool_core::read_demand(std::vector<demand_reading>& out) {
    std::lock_guard lock(threads_mutex_);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        const slot& s = *slots_[i];
        const auto ns = s.probe.demand_ns();
        const auto taken = s.counted.taken.load(std::memory_order_relaxed);
        out[i] = {s.generation, ns.value_or(0), ns.has_value(),
                  taken != s.counted.done.load(std::memory_order_relaxed)};
    }
}

double pool_core::runnable_shortfall(const std::vector<demand_reading>& after, unsigned& computing) {
    double shortfall = 0;
    std::lock_guard lock(threads_mutex_);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        const slot& s = *slots_[i];
        if (thread_demand_[i] < 0 || thread_demand_[i] >= 1 || s.generation != after[i].generation) continue;
        if (!s.probe.runnable()) continue;
        shortfall += 1 - thread_demand_[i];
        if (thread_demand_[i] < blocked_thread_demand) ++computing;
    }
    return shortfall;
}

double pool_core::measure_demand(const std::vector<demand_reading>& before, const std::vector<demand_reading>& after,
                                 std::int64_t span_ns, unsigned& blocked) {
    const double dt = static_cast<double>(std::max<std::int64_t>(1, span_ns));
    double demand = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        const auto &a = before[i], &b = after[i];
        thread_demand_[i] = -1;  // not measured over this span
        if (!a.valid || !b.valid || a.generation != b.generation) continue;
        thread_demand_[i] = static_cast<double>(b.ns >= a.ns ? b.ns - a.ns : 0) / dt;
        demand += thread_demand_[i];
        if (a.in_job && b.in_job && thread_demand_[i] < blocked_thread_demand) ++blocked;
    }
    return demand;
}

void pool_core::governor_main() {
    pthread_setname_np(pthread_self(), "m0-growth");
    std::vector<demand_reading> before(slots_.size()), after(slots_.size());
    thread_demand_.assign(slots_.size(), -1);
    // Since the last log line: the windows measured, and the least and most
    // demand they measured (before any correction).
    std::int64_t last_log_ns = 0;
    unsigned windows = 0;
    // The previous window asked to grow too, from these readings: one window
    // alone never grows the pool (a misjudged window would add up to
    // max_threads at once), and the second decides over both, so that a lump
    // of run-queue wait the kernel added late weighs half as much.
    bool confirming = false;
    std::vector<demand_reading> span_start(slots_.size());
    std::int64_t span_t0 = 0;
    double least = 1e9, most = 0;
    std::unique_lock lock(governor_mutex_);
    for (;;) {
        // Asleep until a push finds no idle thread (announce, then re-check).
        while (!stopping() && !growth_pressure()) {
            blocked_.store(0, std::memory_order_relaxed);
            confirming = false;
            governor_asleep_.exchange(true);
            if (growth_pressure()) {
                governor_asleep_.exchange(false);
                break;
            }
            governor_cv_.wait(lock, [&] { return !governor_asleep_.load() || stopping(); });
        }
        if (stopping()) return;

        // One window.
        const std::uint64_t parks = parks_.load(std::memory_order_relaxed);
        lock.unlock();
        read_demand(before);
        const std::int64_t t0 = now_ns();
        lock.lock();
        if (governor_cv_.wait_for(lock, options_.growth_window, [&] { return stopping(); })) return;
        lock.unlock();
        read_demand(after);
        const std::int64_t t1 = now_ns();

        growth_sample g;
        unsigned blocked = 0;
        g.demand = measure_demand(before, after, t1 - t0, blocked);
        const unsigned live = live_.load(), idle = idle_.load();
        g.busy = live > idle ? live - idle : 0;
        g.live = live;
        g.max = options_.max_threads;
        g.queued = queued_jobs();
        g.sustained = parks_.load(std::memory_order_relaxed) == parks && growth_pressure();
        const double measured = g.demand;
        ++windows;
        least = std::min(least, measured);
        most = std::max(most, measured);
        // Before growing, the threads that showed little demand are asked
        // whether they are on a CPU or waiting for one now: the kernel adds
        // such time late (demand_probe::runnable), and a thread that computes
        // must count whole, or a busy machine would grow the pool for CPU work.
        const auto corrected = [&](unsigned& blocked_seen) {
            if (threads_to_add(g) == 0) return 0u;
            unsigned computing = 0;
            g.demand += runnable_shortfall(after, computing);
            blocked_seen -= std::min(blocked_seen, computing);
            return threads_to_add(g);
        };
        const bool wants = corrected(blocked) > 0;
        blocked_.store(blocked, std::memory_order_relaxed);
        unsigned add = 0;
        if (wants && confirming) {
            unsigned unused = 0;
            g.demand = measure_demand(span_start, after, t1 - span_t0, unused);
            add = corrected(unused);
            confirming = false;
        } else if (wants) {
            span_start = before;
            span_t0 = t0;
            confirming = true;
        } else {
            confirming = false;
        }
        if (add > 0) {
            std::lock_guard threads_lock(threads_mutex_);
            for (unsigned k = 0; k < add && !stopping() && live_.load() < options_.max_threads; ++k) spawn_locked();
        }
        if (log::enabled(log::level::debug) && (add > 0 || t1 - last_log_ns >= 1'000'000'000)) {
            // At most once a second while it does not grow: the figures that
            // explain its choice (docs: the pool's README, "Elastic").
            char text[256];
            std::snprintf(text, sizeof text,
                          "pool: demand %.2f of a core (%.2f measured; %.2f to %.2f over %u window(s)) over %u busy "
                          "thread(s) (%u blocked), %llu job(s) waiting, %u live: %s",
                          g.demand, measured, least, most, windows, g.busy, blocked,
                          static_cast<unsigned long long>(g.queued), g.live,
                          add > 0 ? ("grown by " + std::to_string(add)).c_str() : "not grown");
            log::debug(text);
            last_log_ns = t1;
            windows = 0;
            least = 1e9;
            most = 0;
        }
        lock.lock();
    }
}

}  // namespace m0::pool
