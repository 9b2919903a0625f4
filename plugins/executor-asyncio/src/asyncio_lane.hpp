#pragma once
// The reactor's end of the asyncio executor: jobs and job_tasks go on the
// lane's inbound ring and wake the loop only if it may be asleep; completions
// come back on the lane's completion ring with the pool's announce/re-check
// protocol.
#include <cstdint>
#include <memory>

#include <m0/executor.hpp>

#include "asyncio_core.hpp"

namespace m0::asyncio {

class asyncio_lane final : public executor_lane {
public:
    asyncio_lane(std::shared_ptr<asyncio_core> core, std::shared_ptr<lane_state> state);
    ~asyncio_lane() override;

    void submit(std::unique_ptr<job> j) override;
    std::size_t poll_completions() override;
    bool prepare_to_wait() override;
    void finished_waiting() override;
    std::size_t jobs_in_flight() const override;
    bool post_to_job(std::unique_ptr<job_task> task) override;

    // Stats for metrics: plain reads, any thread.
    std::uint64_t jobs_submitted() const noexcept { return lane_->submitted.load(std::memory_order_relaxed); }
    std::uint64_t jobs_completed() const noexcept { return lane_->completed.load(std::memory_order_relaxed); }
    // Jobs submitted that the loop has not started yet.
    std::uint64_t queue_depth() const noexcept {
        const auto s = lane_->submitted.load(std::memory_order_relaxed);
        const auto r = lane_->started.load(std::memory_order_relaxed);
        return s > r ? s - r : 0;
    }
    unsigned loop_index() const noexcept { return lane_->loop.index; }
    // Of this lane's loop (shared with the other lanes it serves): the last
    // and the largest lag from an idle loop's wake to its drain, and how
    // many wakes were written (pushes while a wake is pending write none).
    std::int64_t loop_lag_ns() const noexcept { return lane_->loop.lag_last_ns.load(std::memory_order_relaxed); }
    std::int64_t loop_lag_max_ns() const noexcept { return lane_->loop.lag_max_ns.load(std::memory_order_relaxed); }
    std::uint64_t loop_wakes() const noexcept { return lane_->loop.wakes.load(std::memory_order_relaxed); }

private:
    void handle(const entry& e) noexcept;
    std::size_t cancel_queued() noexcept;

    std::shared_ptr<asyncio_core> core_;
    std::shared_ptr<lane_state> lane_;
};

}  // namespace m0::asyncio
