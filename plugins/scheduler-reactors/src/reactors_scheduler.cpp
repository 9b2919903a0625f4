#include "reactors_scheduler.hpp"

#include <m0/config.hpp>
#include <m0/reactors/listener_key.hpp>
#include <m0/reactors/reactor_group.hpp>

#include "kernel_placement.hpp"

namespace m0::scheduler_reactors {

socket_layout reactors_scheduler::sockets(unsigned reactors) const {
    return {effective_listener_strategy(strategy_), reactors};
}

std::unique_ptr<reactor_set> reactors_scheduler::make_reactors(frontend& fe, std::vector<executor*> executors,
                                                               scheduler_options options) {
    // A frontend that needs a listener of its own on every reactor gets
    // reuseport sockets unless a supervisor already passed shared ones.
    auto strategy = effective_listener_strategy(strategy_);
    if (fe.needs_per_reactor_listeners()) strategy = listener_strategy::reuseport;
    return std::make_unique<reactors::reactor_group>(fe, std::move(executors), std::move(options),
                                                     std::make_unique<kernel_placement>(strategy));
}

std::unique_ptr<scheduler> make_reactors_scheduler(plugin_context& ctx) {
    ctx.section->allow_keys({"type", "listener"});
    // Several serving processes share one socket by default: their reactors
    // then share out the connections evenly across the processes, where
    // SO_REUSEPORT's hash, blind to load, leaves one process with more than
    // its half of a few keep-alive connections (a proxy's, a load test's) and
    // queues them there at high load (docs/benchmarks/rate_latency.md,
    // "Processes sharing one socket"). In one process the reactors' own
    // sockets stay the default.
    const auto fallback = ctx.process_count > 1 ? listener_strategy::shared : listener_strategy::reuseport;
    return std::make_unique<reactors_scheduler>(reactors::read_listener_key(ctx, fallback));
}

}  // namespace m0::scheduler_reactors
