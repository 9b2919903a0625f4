#pragma once
// The ring-based blocking pool (docs/architecture.md, "The ring-based pool"): m0::executor implemented
// with one job ring and one completion ring per lane, pool threads that spin,
// then park on a futex on their own state word, and wakes sent only to
// parked threads.
#include <cstddef>
#include <memory>

#include <m0/executor.hpp>

#include "pool_options.hpp"

namespace m0::pool {

class pool_core;

class pool_executor final : public executor {
public:
    explicit pool_executor(pool_options options);
    ~pool_executor() override;

    std::string_view name() const override { return "pool"; }
    void add_thread_hooks(thread_hooks hooks) override;
    void start() override;
    std::unique_ptr<executor_lane> make_lane(std::shared_ptr<reactor_waker> waker) override;
    unsigned stop(std::chrono::milliseconds grace) override;
    using executor::stop;
    executor_stats stats() const override;
    bool write_off(long thread) noexcept override;

    const pool_options& options() const noexcept;
    // Observability (tests, the per-thread CPU tool, stats pages).
    unsigned live_threads() const noexcept;    // started and not exited
    unsigned parked_threads() const noexcept;  // parked: announced, blocked or about to
    unsigned idle_threads() const noexcept;    // live, not running a job

private:
    std::shared_ptr<pool_core> core_;
};

}  // namespace m0::pool
