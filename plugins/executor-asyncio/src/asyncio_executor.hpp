#pragma once
// `executor.type: asyncio`: asyncio event loops on threads of their own; each
// reactor's lane is served by one loop. Also offers the loops to frontends as
// python::loop_service (an ASGI lifespan runs on each of them).
#include <Python.h>

#include <memory>

#include <m0/executor.hpp>
#include <m0/services.hpp>

#include "asyncio_core.hpp"

namespace m0::asyncio {

class asyncio_executor final : public executor {
public:
    // The interpreter must be running (python::start).
    explicit asyncio_executor(asyncio_options options);
    ~asyncio_executor() override;

    std::string_view name() const override { return "asyncio"; }
    void add_thread_hooks(thread_hooks hooks) override { core_->add_thread_hooks(std::move(hooks)); }
    void start() override { core_->start(); }
    std::unique_ptr<executor_lane> make_lane(std::shared_ptr<reactor_waker> waker) override;
    unsigned stop(std::chrono::milliseconds grace) override { return core_->stop(grace); }
    using executor::stop;
    executor_stats stats() const override { return core_->stats(); }

    unsigned loop_count() const { return core_->loop_count(); }
    PyObject* loop(unsigned index) const { return core_->loop_object(index); }

    // Offers this executor's loops as python::loop_service in `services`.
    // The service is a process-wide handle on the live executor: under
    // server.workers the first process builds an executor only to validate
    // the config, and each serving process then builds its own in the same
    // registry.
    void provide_loops(service_registry& services);

private:
    std::shared_ptr<asyncio_core> core_;
};

}  // namespace m0::asyncio
