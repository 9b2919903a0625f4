#pragma once
// One reactor's lanes of several executors (`executors:` / `mounts:`) seen as
// the one lane the reactor loop serves: every pass polls all of them, and the
// reactor blocks only when all of them agreed to its wait.
#include <memory>
#include <vector>

#include <m0/executor.hpp>

namespace m0::reactors {

class combined_lane final : public executor_lane {
public:
    // Owns the lanes; at least one.
    explicit combined_lane(std::vector<std::unique_ptr<executor_lane>> lanes);

    // Frontends submit to their own executor's lane (reactor_context::lane);
    // this goes to the first, for a caller that has only the loop's lane.
    void submit(std::unique_ptr<job> j) override;
    std::size_t poll_completions() override;
    // Announces the wait to each lane in turn; if one has completions
    // pending, the lanes that already announced are told the wait is over
    // and the reactor does not block.
    bool prepare_to_wait() override;
    void finished_waiting() override;
    void on_reactor_pass() override;
    std::size_t jobs_in_flight() const override;
    bool post_to_job(std::unique_ptr<job_task> task) override;

private:
    std::vector<std::unique_ptr<executor_lane>> lanes_;
};

}  // namespace m0::reactors
