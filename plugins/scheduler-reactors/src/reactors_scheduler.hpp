#pragma once
// The `reactors` scheduler: N reactor threads, each accepting for itself on
// sockets the kernel places connections on (plugins/scheduler-reactors/README.md).
#include <memory>
#include <vector>

#include <m0/plugin.hpp>
#include <m0/scheduler.hpp>

namespace m0::scheduler_reactors {

class reactors_scheduler final : public scheduler {
public:
    // strategy: scheduler.listener (or server.listener), before M0_REUSEPORT_WORKERS.
    explicit reactors_scheduler(listener_strategy strategy) : strategy_(strategy) {}

    const char* name() const noexcept override { return "reactors"; }
    socket_layout sockets(unsigned reactors) const override;
    std::unique_ptr<reactor_set> make_reactors(frontend& fe, std::vector<executor*> executors,
                                               scheduler_options options) override;

private:
    listener_strategy strategy_;
};

// The plugin's factory: reads and checks `scheduler:`.
std::unique_ptr<scheduler> make_reactors_scheduler(plugin_context& ctx);

}  // namespace m0::scheduler_reactors
