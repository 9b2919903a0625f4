#include <m0/reactors/listener_key.hpp>

namespace m0::reactors {

listener_strategy read_listener_key(const plugin_context& ctx, listener_strategy fallback) {
    const config_node& section = *ctx.section;
    const auto old_spelling = ctx.root->child("server").optional_string("listener");
    const bool both = old_spelling && section.has("listener");
    const std::string value = section.one_of("listener", old_spelling.value_or(fallback == listener_strategy::shared ? "shared" : "reuseport"), {"reuseport", "shared"});
    if (both && value != *old_spelling)
        section.fail("listener", "'" + value + "' but server.listener (its older spelling) says '" + *old_spelling +
                                     "': set only one of them");
    return value == "shared" ? listener_strategy::shared : listener_strategy::reuseport;
}

}  // namespace m0::reactors
