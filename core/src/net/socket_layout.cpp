#include <cstdlib>
#include <string>
#include <string_view>

#include <m0/scheduler.hpp>

namespace m0 {

std::string to_string(const socket_layout& layout) {
    if (layout.strategy == listener_strategy::shared) return "one shared socket per address";
    const unsigned n = layout.reuseport_sockets;
    return std::to_string(n) + " reuseport socket" + (n == 1 ? "" : "s") + " per process and address";
}

listener_strategy effective_listener_strategy(listener_strategy configured) {
    const char* env = std::getenv("M0_REUSEPORT_WORKERS");
    if (env && std::string_view(env) == "0") return listener_strategy::shared;
    return configured;
}

}  // namespace m0
