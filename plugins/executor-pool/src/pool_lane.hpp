#pragma once
// The reactor's end of the pool: submits jobs, drains completions, and runs
// the reactor half of the wake protocol.
#include <memory>

#include <m0/executor.hpp>

#include "pool_core.hpp"

namespace m0::pool {

class pool_lane final : public executor_lane {
public:
    pool_lane(std::shared_ptr<pool_core> core, std::shared_ptr<lane_state> state);
    ~pool_lane() override;

    void submit(std::unique_ptr<job> j) override;
    std::size_t poll_completions() override;
    bool prepare_to_wait() override;
    void finished_waiting() override;
    void on_reactor_pass() override;
    std::size_t jobs_in_flight() const override;
    // The lane's state, for the pool's tests.
    const lane_state& state() const noexcept { return *lane_; }

private:
    // The shortest spin (with no wait measured yet, say).
    static constexpr std::int64_t spin_floor_ns = 500;
    static constexpr std::int64_t max_counted_wait_ns = 1'000'000;

    std::size_t poll_ring() noexcept;
    // The adaptive reactor-side spin: true once a completion is waiting.
    bool spin_for_completion() noexcept;
    // After completions ran: ends a measured wait.
    void note_completions() noexcept;
    void handle(const completion_entry& entry) noexcept;
    std::size_t drain_completion_overflow() noexcept;
    void drain_job_overflow() noexcept;
    // Publishes the reactor-only queue counts for the executor's stats().
    void publish_counts() noexcept;
    std::size_t cancel_queued() noexcept;
    void finish(job* j, bool cancelled) noexcept;

    std::shared_ptr<pool_core> core_;
    std::shared_ptr<lane_state> lane_;
    bool cpus_reported_ = false;  // add_reactor_cpus ran on the first pass
};

}  // namespace m0::pool
