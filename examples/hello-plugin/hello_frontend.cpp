// The "hello" frontend: answers every request with one fixed body.
//
// A complete third-party plugin: a frontend that hands each worker's
// listeners to the core HTTP/1.1 engine, a handler, a factory that reads the
// plugin's own config section, and the descriptor the loader looks for.
#include <memory>
#include <string>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/http.hpp>
#include <m0/plugin.hpp>

namespace {

class hello_handler final : public m0::http::handler {
public:
    explicit hello_handler(std::string body) : body_(std::move(body)) {}

    // Runs on every reactor thread at once; it only reads body_.
    void on_request(m0::http::exchange_ptr ex) override {
        ex->respond(200, {{"Content-Type", "text/plain; charset=utf-8"}}, body_);
    }

private:
    const std::string body_;
};

class hello_frontend final : public m0::frontend {
public:
    explicit hello_frontend(std::string body) : handler_(std::move(body)) {}

    void start_reactor(m0::reactor_context& ctx) override { m0::http::serve(ctx, handler_); }

private:
    hello_handler handler_;  // outlives every worker loop: the frontend does
};

std::unique_ptr<m0::frontend> make_hello_frontend(m0::plugin_context& ctx) {
    std::string body = "Hello from a plugin!\n";
    if (ctx.section) {
        ctx.section->allow_keys({"type", "body"});
        body = ctx.section->string("body", body);
    }
    return std::make_unique<hello_frontend>(std::move(body));
}

}  // namespace

M0_FRONTEND_PLUGIN("hello", "answers every request with a fixed body (example plugin)", make_hello_frontend);
