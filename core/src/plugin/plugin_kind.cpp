#include <m0/plugin.hpp>

namespace m0 {

// M0_API here because plugin.hpp declares it without; m0 and plugins call it.
M0_API const char* to_string(plugin_kind kind) noexcept {
    switch (kind) {
        case plugin_kind::frontend: return "frontend";
        case plugin_kind::executor: return "executor";
        case plugin_kind::module: return "module";
        case plugin_kind::scheduler: return "scheduler";
    }
    return "unknown";
}

}  // namespace m0
