#include "pool_executor.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "pool_core.hpp"
#include "pool_lane.hpp"

namespace m0::pool {

pool_executor::pool_executor(pool_options options)
    : core_(std::make_shared<pool_core>(options)) {}

pool_executor::~pool_executor() {
    // Threads left inside a job at stop() still use the core: keep it for
    // the rest of the process (a leak by design, not one to report).
    if (core_->stop(std::chrono::milliseconds::max()) > 0) {
        auto* kept = new std::shared_ptr<pool_core>(core_);
#if defined(__SANITIZE_ADDRESS__)
        __lsan_ignore_object(kept);
#else
        (void)kept;
#endif
    }
}

void pool_executor::add_thread_hooks(thread_hooks hooks) { core_->add_thread_hooks(std::move(hooks)); }
void pool_executor::start() { core_->start(); }

std::unique_ptr<executor_lane> pool_executor::make_lane(std::shared_ptr<reactor_waker> waker) {
    return std::make_unique<pool_lane>(core_, core_->add_lane(std::move(waker)));
}

unsigned pool_executor::stop(std::chrono::milliseconds grace) { return core_->stop(grace); }
executor_stats pool_executor::stats() const { return core_->stats(); }

bool pool_executor::write_off(long thread) noexcept { return core_->write_off(thread); }

const pool_options& pool_executor::options() const noexcept { return core_->options(); }
unsigned pool_executor::live_threads() const noexcept { return core_->live_threads(); }
unsigned pool_executor::parked_threads() const noexcept { return core_->parked_threads(); }
unsigned pool_executor::idle_threads() const noexcept { return core_->idle_threads(); }

}  // namespace m0::pool
