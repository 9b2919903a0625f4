#include "pool_lane.hpp"

#include <algorithm>
#include <thread>

namespace m0::pool {

pool_lane::pool_lane(std::shared_ptr<pool_core> core, std::shared_ptr<lane_state> state)
    : core_(std::move(core)), lane_(std::move(state)) {}

pool_lane::~pool_lane() { lane_->closed.store(true); }

namespace {
// in_flight is written by the lane's reactor alone (submit and finish): a
// load and a store, not a locked read-modify-write per request.
void add_in_flight(std::atomic<std::size_t>& n, int delta) noexcept {
    n.store(n.load(std::memory_order_relaxed) + static_cast<std::size_t>(delta), std::memory_order_relaxed);
}
}  // namespace

void pool_lane::submit(std::unique_ptr<job> j) {
    add_in_flight(lane_->in_flight, 1);
    const queued_job queued{j.release(), now_ns()};
    // Backpressure: a full ring never drops a job. It waits, in order, in the
    // lane's overflow list and moves to the ring as pool threads make room;
    // every job on the ring ends in a completion, which wakes this reactor
    // to move the next ones.
    if (core_->stopping() || !lane_->job_overflow.empty() || !lane_->jobs->try_push(queued)) {
        lane_->job_overflow.push_back(queued);
        publish_counts();
        return;
    }
    ++lane_->pushed;
    publish_counts();
    core_->on_job_pushed();
}

void pool_lane::publish_counts() noexcept {
    lane_->pushed_seen.store(lane_->pushed, std::memory_order_relaxed);
    lane_->overflow_seen.store(lane_->job_overflow.size(), std::memory_order_relaxed);
}

void pool_lane::drain_job_overflow() noexcept {
    auto& overflow = lane_->job_overflow;
    bool moved = false;
    while (!overflow.empty() && !core_->stopping() && lane_->jobs->try_push(overflow.front())) {
        overflow.pop_front();
        ++lane_->pushed;
        moved = true;
        core_->on_job_pushed();
    }
    if (moved) publish_counts();
}

void pool_lane::finish(job* j, bool cancelled) noexcept {
    j->complete(cancelled);
    delete j;
    add_in_flight(lane_->in_flight, -1);
}

void pool_lane::handle(const completion_entry& entry) noexcept {
    if (entry.kind == completion_entry::done) {
        finish(static_cast<job*>(entry.ptr), false);
        return;
    }
    auto* task = static_cast<reactor_task*>(entry.ptr);
    task->run_on_reactor();
    delete task;
}

std::size_t pool_lane::drain_completion_overflow() noexcept {
    std::vector<completion_entry> batch;
    std::vector<completion_entry> spilled;
    {
        std::lock_guard lock(lane_->overflow_mutex);
        // Completers now append to the list (the lock is held), so the ring
        // only gets pushes already under way. Everything on the ring was
        // pushed before what is on the list, so it runs first; wait for those
        // under-way pushes to publish (a few instructions each).
        completion_entry e;
        for (;;) {
            while (lane_->completions->try_pop(e)) batch.push_back(e);
            if (!lane_->completions->maybe_nonempty()) break;
            std::this_thread::yield();
        }
        spilled.swap(lane_->completion_overflow);
        lane_->overflow_mode.store(false);
    }
    for (const auto& e : batch) handle(e);
    for (const auto& e : spilled) handle(e);
    return batch.size() + spilled.size();
}

std::size_t pool_lane::cancel_queued() noexcept {
    std::size_t n = 0;
    queued_job q;
    while (lane_->jobs->try_pop(q)) {
        // Counted as taken, so the queue depth does not keep them.
        lane_->taken.fetch_add(1, std::memory_order_relaxed);
        finish(q.j, true);
        ++n;
    }
    while (!lane_->job_overflow.empty()) {
        q = lane_->job_overflow.front();
        lane_->job_overflow.pop_front();
        finish(q.j, true);
        ++n;
    }
    if (n) publish_counts();
    return n;
}

// Reactor-side spin, adaptive: a completion that arrives while the reactor
// spins costs no wake on either side, but a spin that waits for a slow job
// only burns the core the pool thread and the clients need. So the reactor
// spins only while its recent waits for a completion (from running out of
// work to the completion) averaged below reactor_spin (what the operator
// says a wake costs), and for no longer than twice that average; one long
// wait pushes the average up and ends the spinning until waits are short
// again.
bool pool_lane::spin_for_completion() noexcept {
    const std::int64_t limit = core_->options().reactor_spin.count();
    if (limit <= 0 || jobs_in_flight() == 0) return false;
    auto& s = lane_->spin;
    const std::int64_t start = now_ns();
    if (s.wait_start_ns == 0) s.wait_start_ns = start;
    if (s.average_wait_ns > limit) return false;
    const std::int64_t deadline = start + std::min(limit, 2 * s.average_wait_ns + spin_floor_ns);
    do {
        if (lane_->completions->maybe_nonempty()) return true;
        cpu_relax();
    } while (now_ns() < deadline);
    ++s.missed;
    return false;
}

void pool_lane::note_completions() noexcept {
    auto& s = lane_->spin;
    if (s.wait_start_ns == 0) return;  // it did not have to wait for these
    // Clamped, so that one very long job does not stop the spinning for
    // longer than a few dozen short waits.
    const std::int64_t waited = std::min<std::int64_t>(now_ns() - s.wait_start_ns, max_counted_wait_ns);
    s.average_wait_ns += (waited - s.average_wait_ns) / 8;  // moving average over ~8 waits
    s.wait_start_ns = 0;
}

std::size_t pool_lane::poll_completions() {
    std::size_t n = poll_ring();
    if (n > 0 && core_->options().reactor_spin.count() > 0) note_completions();
    return n;
}

std::size_t pool_lane::poll_ring() noexcept {
    std::size_t n = 0;
    if (lane_->stash) {
        const completion_entry e = *lane_->stash;
        lane_->stash.reset();
        handle(e);
        ++n;
    }
    completion_entry e;
    while (lane_->completions->try_pop(e)) {
        handle(e);
        ++n;
    }
    if (lane_->overflow_mode.load()) n += drain_completion_overflow();
    if (core_->stopping()) {
        n += cancel_queued();
    } else {
        drain_job_overflow();
    }
    return n;
}

bool pool_lane::prepare_to_wait() {
    if (lane_->stash) return false;
    if (core_->stopping() && (!lane_->job_overflow.empty() || lane_->jobs->maybe_nonempty()))
        return false;  // queued jobs to cancel
    if (spin_for_completion()) return false;
    // Announce, re-check, and only then let the reactor block.
    lane_->reactor_waiting.exchange(true);  // an RMW: see pool_core.cpp
    const auto window = core_->options().test_park_window;
    if (window.count() > 0) std::this_thread::sleep_for(window);
    completion_entry e;
    if (lane_->completions->try_pop(e)) {
        lane_->stash = e;
    } else if (!lane_->overflow_mode.load()) {
        return true;
    }
    lane_->reactor_waiting.exchange(false);
    return false;
}

// An RMW, not a store: every write of the flag must continue the chain of
// RMWs the completers synchronise through.
void pool_lane::finished_waiting() { lane_->reactor_waiting.exchange(false); }

void pool_lane::on_reactor_pass() {
    if (!cpus_reported_) {
        cpus_reported_ = true;
        core_->add_reactor_cpus();
    }
    if (core_->stopping()) return;
    drain_job_overflow();
    if (!core_->ring_mode()) return;
    // Age check: jobs wait on the ring and none was taken for max_job_age
    // (a wake that went astray, or every thread busy) → wake or grow.
    const std::uint64_t taken = lane_->taken.load(std::memory_order_relaxed);
    if (taken == lane_->pushed) return;
    const auto now = std::chrono::steady_clock::now();
    if (taken != lane_->last_taken_seen) {
        lane_->last_taken_seen = taken;
        lane_->stall_since = now;
        return;
    }
    if (now - lane_->stall_since >= core_->options().max_job_age) {
        lane_->stall_since = now;
        core_->on_stalled_lane();
    }
}

std::size_t pool_lane::jobs_in_flight() const { return lane_->in_flight.load(std::memory_order_relaxed); }

}  // namespace m0::pool
