#include <memory>
#include <vector>

#include <m0/config.hpp>
#include <m0/plugin.hpp>
#include <m0/reactors/listener_key.hpp>
#include <m0/reactors/reactor_group.hpp>
#include <m0/scheduler.hpp>

#include "balanced_placement.hpp"

namespace m0::scheduler_balanced {
namespace {

// `balanced`: one accept point per process, every connection placed on the
// reactor with the fewest live connections (README.md beside this folder).
class balanced_scheduler final : public scheduler {
public:
    explicit balanced_scheduler(listener_strategy strategy) : strategy_(strategy) {}

    const char* name() const noexcept override { return "balanced"; }
    // One accept socket per process and address, whatever the reactor count.
    socket_layout sockets(unsigned) const override { return {effective_listener_strategy(strategy_), 1}; }
    std::unique_ptr<reactor_set> make_reactors(frontend& fe, std::vector<executor*> executors,
                                               scheduler_options options) override {
        return std::make_unique<reactors::reactor_group>(
            fe, std::move(executors), std::move(options),
            std::make_unique<balanced_placement>(effective_listener_strategy(strategy_)));
    }

private:
    listener_strategy strategy_;
};

std::unique_ptr<scheduler> make_balanced_scheduler(plugin_context& ctx) {
    ctx.section->allow_keys({"type", "listener"});
    // Several serving processes share one socket by default, and share its
    // connections out (balanced_placement: a process ahead of another's
    // idle reactor leaves it the next ones), as under `reactors`.
    const auto fallback = ctx.process_count > 1 ? listener_strategy::shared : listener_strategy::reuseport;
    return std::make_unique<balanced_scheduler>(reactors::read_listener_key(ctx, fallback));
}

}  // namespace
}  // namespace m0::scheduler_balanced

M0_SCHEDULER_PLUGIN("balanced",
                    "one accept point per process; each connection goes to the reactor with the fewest live "
                    "connections (spread at most one)",
                    m0::scheduler_balanced::make_balanced_scheduler);
