// Module plugin `greeter` (section `greeter:`): provides greeting_service and
// logs every lifecycle hook. `fail_at: start_serving` makes that hook throw.
#include <memory>
#include <stdexcept>
#include <string>

#include <m0/config.hpp>
#include <m0/module.hpp>
#include <m0/plugin.hpp>
#include <m0/services.hpp>

#include "greeting_service.hpp"
#include "hook_log.hpp"

namespace {

class greeter final : public m0::module, public m0::test::greeting_service {
public:
    explicit greeter(m0::plugin_context& ctx) {
        const auto& section = *ctx.section;
        section.allow_keys({"greeting", "fail_at"});
        greeting_ = section.string("greeting", "hello");
        fail_at_ = section.one_of("fail_at", "", {"", "start_serving"});
        ctx.services->provide<m0::test::greeting_service>(*this, "module greeter");
        m0::test::log_hook("module", "constructed");
    }
    std::string greeting() const override { return greeting_; }

    void prepare(m0::executor&) override { m0::test::log_hook("module", "prepare"); }
    void start_serving(m0::serving_context& ctx) override {
        m0::test::log_hook("module", "start_serving",
                           "process=" + std::to_string(ctx.process_index) + "/" + std::to_string(ctx.process_count));
        if (fail_at_ == "start_serving") throw std::runtime_error("greeter: refusing to start as configured");
    }
    void start_reactor(m0::reactor_context& ctx) override {
        m0::test::log_hook("module", "start_reactor", "worker=" + std::to_string(ctx.index));
    }
    void stop_reactor(m0::reactor_context& ctx) override {
        m0::test::log_hook("module", "stop_reactor", "worker=" + std::to_string(ctx.index));
    }
    void stop_serving(m0::serving_context&) override { m0::test::log_hook("module", "stop_serving"); }
    void after_fork_child() override { m0::test::log_hook("module", "after_fork_child"); }

private:
    std::string greeting_;
    std::string fail_at_;
};

std::unique_ptr<m0::module> make_greeter(m0::plugin_context& ctx) { return std::make_unique<greeter>(ctx); }

}  // namespace

M0_MODULE_PLUGIN("greeter", "test module: provides a greeting service, logs its hooks", make_greeter);
