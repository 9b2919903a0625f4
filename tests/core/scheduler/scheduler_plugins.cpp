#include "scheduler_plugins.hpp"

#include <map>
#include <stdexcept>

#include <m0/config.hpp>
#include <m0/plugin.hpp>

#include "plugin/plugin_loader.hpp"

namespace m0::test {

const std::vector<scheduler_config>& every_scheduler() {
    static const std::vector<scheduler_config> all = {
        {"reactors", "scheduler: {type: reactors}"},
        {"reactors-shared", "scheduler: {type: reactors, listener: shared}"},
        {"balanced", "scheduler: {type: balanced}"},
    };
    return all;
}

const std::string& scheduler_yaml(const std::string& label) {
    for (const auto& s : every_scheduler())
        if (s.label == label) return s.yaml;
    throw std::invalid_argument("no scheduler configuration '" + label + "'");
}

scheduler& load_scheduler(const std::string& yaml) {
    // Plugins are never unloaded; the schedulers live as long as the test.
    static plugin_loader loader({M0_PLUGIN_DIR});
    static std::map<std::string, std::unique_ptr<scheduler>> built;
    auto& slot = built[yaml];
    if (!slot) {
        auto doc = config_document::from_string(yaml, "test.yaml");
        const config_node root = doc.root();
        const config_node section = root.child("scheduler");
        plugin_context ctx;
        ctx.section = &section;
        ctx.root = &root;
        const auto& plugin = loader.load(plugin_kind::scheduler, section.string("type", "reactors"));
        slot = plugin.descriptor->make_scheduler(ctx);
    }
    return *slot;
}

std::unique_ptr<reactor_set> make_reactors(const std::string& yaml, frontend& fe, std::vector<executor*> executors,
                                           scheduler_options options) {
    return load_scheduler(yaml).make_reactors(fe, std::move(executors), std::move(options));
}

scheduler_options loopback_options(unsigned reactors, std::size_t addresses) {
    scheduler_options o;
    o.reactors = reactors;
    o.pin_cores = true;
    for (std::size_t i = 0; i < addresses; ++i)
        o.addresses.push_back(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    return o;
}

}  // namespace m0::test
