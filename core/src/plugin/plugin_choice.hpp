#pragma once
// Loading the plugin that a config key names (`frontend.type: http`,
// `executor.type: pool`): a name no plugin file has is a config error at that
// key, with the nearest name found and every plugin of that kind found.
#include <string>
#include <string_view>
#include <vector>

#include <m0/config.hpp>
#include <m0/plugin.hpp>

#include "plugin/plugin_loader.hpp"

namespace m0 {

// `at` is the node holding `key` (the `frontend` section, an entry of
// `executors`). `builtin` names served by the core for this kind (`inline`
// for executors) count as found. Throws config_error for a missing plugin,
// plugin_error for a refused one.
M0_INTERNAL_API const loaded_plugin& load_chosen_plugin(plugin_loader& loader, plugin_kind kind,
                                                        const std::string& name, const config_node& at,
                                                        std::string_view key,
                                                        const std::vector<std::string>& builtin = {});

}  // namespace m0
