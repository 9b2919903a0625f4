// The plugin's one exported symbol: `executor.type: pool`.
#include <algorithm>
#include <cstdlib>
#include <thread>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/plugin.hpp>

#include "pool_config.hpp"
#include "pool_executor.hpp"

namespace {

std::unique_ptr<m0::executor> make_pool_executor(m0::plugin_context& ctx) {
    return std::make_unique<m0::pool::pool_executor>(m0::pool::read_pool_options(
        *ctx.section, std::getenv("M0_POOL_RING"), ctx.reactor_count * ctx.process_count,
        std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace

M0_EXECUTOR_PLUGIN("pool", "ring-based blocking pool: jobs off the reactor, completions back to it",
                   make_pool_executor);
