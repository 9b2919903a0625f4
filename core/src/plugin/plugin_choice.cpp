#include "plugin/plugin_choice.hpp"

#include <algorithm>

namespace m0 {

const loaded_plugin& load_chosen_plugin(plugin_loader& loader, plugin_kind kind, const std::string& name,
                                        const config_node& at, std::string_view key,
                                        const std::vector<std::string>& builtin) {
    try {
        return loader.load(kind, name);
    } catch (const plugin_not_found&) {
        std::vector<std::string> found = loader.names_found(kind);
        found.insert(found.end(), builtin.begin(), builtin.end());
        std::sort(found.begin(), found.end());
        const std::string kind_name = to_string(kind);
        std::string msg = "no " + kind_name + " plugin '" + name + "'";
        if (const auto near = nearest_key(name, found)) msg += " (did you mean '" + *near + "'?)";
        msg += "; " + kind_name + " plugins found: ";
        if (found.empty()) msg += "none";
        for (std::size_t i = 0; i < found.size(); ++i) msg += (i ? ", " : "") + found[i];
        msg += " (searched:";
        for (const auto& dir : loader.search_dirs()) msg += " " + dir;
        msg += "; more directories with plugins.path or M0_PLUGIN_PATH)";
        at.fail(key, msg);
    }
}

}  // namespace m0
