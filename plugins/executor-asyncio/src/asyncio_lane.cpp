#include "asyncio_lane.hpp"

namespace m0::asyncio {

asyncio_lane::asyncio_lane(std::shared_ptr<asyncio_core> core, std::shared_ptr<lane_state> state)
    : core_(std::move(core)), lane_(std::move(state)) {}

asyncio_lane::~asyncio_lane() { lane_->closed.store(true); }

void asyncio_lane::submit(std::unique_ptr<job> j) {
    lane_->in_flight.fetch_add(1, std::memory_order_relaxed);
    lane_->submitted.fetch_add(1, std::memory_order_relaxed);
    // Never dropped: a full ring spills, in order (spill_ring). A job queued
    // after the loop stopped is cancelled by the next poll.
    lane_->inbound.push({j.release(), entry::job_entry, now_ns()});
    asyncio_core::wake_loop(lane_->loop);
}

bool asyncio_lane::post_to_job(std::unique_ptr<job_task> task) {
    lane_->inbound.push({task.release(), entry::task_entry});
    asyncio_core::wake_loop(lane_->loop);
    return true;
}

void asyncio_lane::handle(const entry& e) noexcept {
    if (e.kind == entry::job_entry) {
        auto* j = static_cast<job*>(e.ptr);
        j->complete(false);
        delete j;
        lane_->completed.fetch_add(1, std::memory_order_relaxed);
        lane_->in_flight.fetch_sub(1, std::memory_order_relaxed);
        return;
    }
    auto* task = static_cast<reactor_task*>(e.ptr);
    task->run_on_reactor();
    delete task;
}

// Only once the loop thread is gone: it is then the ring's only consumer.
std::size_t asyncio_lane::cancel_queued() noexcept {
    return lane_->inbound.drain([&](const entry& e) {
        if (e.kind == entry::task_entry) {
            delete static_cast<job_task*>(e.ptr);
            return;
        }
        auto* j = static_cast<job*>(e.ptr);
        j->complete(true);
        delete j;
        lane_->started.fetch_add(1, std::memory_order_relaxed);  // no longer queued
        lane_->completed.fetch_add(1, std::memory_order_relaxed);
        lane_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    });
}

std::size_t asyncio_lane::poll_completions() {
    std::size_t n = lane_->completions.drain([&](const entry& e) { handle(e); });
    if (lane_->loop.exited.load()) n += cancel_queued();
    return n;
}

bool asyncio_lane::prepare_to_wait() {
    if (lane_->loop.exited.load() && lane_->inbound.maybe_nonempty()) return false;  // jobs to cancel
    // Announce, re-check, and only then let the reactor block.
    lane_->reactor_waiting.exchange(true);  // an RMW, like the pool's
    if (!lane_->completions.maybe_nonempty()) return true;
    lane_->reactor_waiting.exchange(false);
    return false;
}

void asyncio_lane::finished_waiting() { lane_->reactor_waiting.exchange(false); }

std::size_t asyncio_lane::jobs_in_flight() const { return lane_->in_flight.load(std::memory_order_relaxed); }

}  // namespace m0::asyncio
