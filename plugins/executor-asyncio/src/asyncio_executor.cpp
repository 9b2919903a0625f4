#include "asyncio_executor.hpp"

#include <atomic>

#include <m0/python/loop_service.hpp>

#include "asyncio_lane.hpp"

namespace m0::asyncio {

namespace {

class live_loops final : public python::loop_service {
public:
    unsigned loop_count() const override {
        auto* ex = current.load();
        return ex ? ex->loop_count() : 0;
    }
    PyObject* loop(unsigned index) const override {
        auto* ex = current.load();
        return ex ? ex->loop(index) : nullptr;
    }
    std::atomic<asyncio_executor*> current{nullptr};
    service_registry* registered_in = nullptr;  // main thread only
};

live_loops& loops_handle() {
    static live_loops handle;
    return handle;
}

}  // namespace

void asyncio_executor::provide_loops(service_registry& services) {
    live_loops& h = loops_handle();
    if (h.registered_in != &services) {
        services.provide<python::loop_service>(h, "executor asyncio");
        h.registered_in = &services;
    }
    h.current.store(this);
}

asyncio_executor::asyncio_executor(asyncio_options options)
    : core_(std::make_shared<asyncio_core>(options)) {}

asyncio_executor::~asyncio_executor() {
    asyncio_executor* self = this;
    loops_handle().current.compare_exchange_strong(self, nullptr);
    core_->stop(std::chrono::milliseconds::max());
}

std::unique_ptr<executor_lane> asyncio_executor::make_lane(std::shared_ptr<reactor_waker> waker) {
    return std::make_unique<asyncio_lane>(core_, core_->add_lane(std::move(waker)));
}

}  // namespace m0::asyncio
