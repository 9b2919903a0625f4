#include "asyncio_executor.hpp"

#include "asyncio_lane.hpp"

namespace m0::asyncio {

asyncio_executor::asyncio_executor(asyncio_options options)
    : core_(std::make_shared<asyncio_core>(options)) {}

asyncio_executor::~asyncio_executor() { core_->stop(std::chrono::milliseconds::max()); }

std::unique_ptr<executor_lane> asyncio_executor::make_lane(std::shared_ptr<reactor_waker> waker) {
    return std::make_unique<asyncio_lane>(core_, core_->add_lane(std::move(waker)));
}

}  // namespace m0::asyncio
