// The plugin's one exported symbol: loaded when the deployment has `realtime:`.
#include <m0/plugin.hpp>

#include "realtime_module.hpp"

namespace {

std::unique_ptr<m0::module> make_realtime(m0::plugin_context& ctx) {
    return std::make_unique<m0::realtime::realtime_module>(ctx);
}

}  // namespace

M0_MODULE_PLUGIN("realtime", "the realtime hold path: held SSE and long-poll connections, publish to channels",
                 make_realtime);
