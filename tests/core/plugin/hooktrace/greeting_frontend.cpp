// Frontend plugin `greeting`: answers every request with the greeting of the
// service the `greeter` module provides (503 when no module provides it),
// and logs every lifecycle hook.
#include <memory>
#include <string>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/http.hpp>
#include <m0/plugin.hpp>
#include <m0/services.hpp>

#include "greeting_service.hpp"
#include "hook_log.hpp"

namespace {

class greeting_frontend final : public m0::frontend, public m0::http::handler {
public:
    explicit greeting_frontend(m0::plugin_context& ctx) {
        ctx.section->allow_keys({"type"});
        // Looked up at construction: modules are built before frontends.
        service_ = ctx.services->find<m0::test::greeting_service>();
        m0::test::log_hook("frontend", "constructed", service_ ? "service=found" : "service=missing");
    }

    void prepare(m0::executor&) override { m0::test::log_hook("frontend", "prepare"); }
    void start_serving(m0::serving_context& ctx) override {
        m0::test::log_hook("frontend", "start_serving",
                           "process=" + std::to_string(ctx.process_index) + "/" + std::to_string(ctx.process_count));
    }
    void start_reactor(m0::reactor_context& ctx) override {
        m0::test::log_hook("frontend", "start_reactor", "worker=" + std::to_string(ctx.index));
        m0::http::serve(ctx, *this);
    }
    void stop_reactor(m0::reactor_context& ctx) override {
        m0::test::log_hook("frontend", "stop_reactor", "worker=" + std::to_string(ctx.index));
    }
    void stop_serving(m0::serving_context&) override { m0::test::log_hook("frontend", "stop_serving"); }
    void after_fork_child() override { m0::test::log_hook("frontend", "after_fork_child"); }

    void on_request(m0::http::exchange_ptr ex) override {
        if (!service_) {
            ex->respond(503, {{"Content-Type", "text/plain"}}, "no greeting service\n");
            return;
        }
        ex->respond(200, {{"Content-Type", "text/plain"}}, service_->greeting() + "\n");
    }

private:
    const m0::test::greeting_service* service_ = nullptr;
};

std::unique_ptr<m0::frontend> make_greeting(m0::plugin_context& ctx) {
    return std::make_unique<greeting_frontend>(ctx);
}

}  // namespace

M0_FRONTEND_PLUGIN("greeting", "test frontend: answers with the greeting service's text", make_greeting);
