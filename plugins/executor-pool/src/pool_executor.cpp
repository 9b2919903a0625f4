#include "pool_executor.hpp"

#include "pool_core.hpp"
#include "pool_lane.hpp"

namespace m0::pool {

pool_executor::pool_executor(pool_options options)
    : core_(std::make_shared<pool_core>(options)) {}

pool_executor::~pool_executor() { core_->stop(); }

void pool_executor::add_thread_hooks(thread_hooks hooks) { core_->add_thread_hooks(std::move(hooks)); }
void pool_executor::start() { core_->start(); }

std::unique_ptr<executor_lane> pool_executor::make_lane(reactor_waker& waker) {
    return std::make_unique<pool_lane>(core_, core_->add_lane(waker));
}

void pool_executor::stop() { core_->stop(); }

const pool_options& pool_executor::options() const noexcept { return core_->options(); }
unsigned pool_executor::live_threads() const noexcept { return core_->live_threads(); }
unsigned pool_executor::parked_threads() const noexcept { return core_->parked_threads(); }
unsigned pool_executor::idle_threads() const noexcept { return core_->idle_threads(); }

}  // namespace m0::pool
