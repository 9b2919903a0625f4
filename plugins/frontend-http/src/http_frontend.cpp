// The `http` frontend plugin: native handlers (fixed routes, static files)
// served by the core HTTP/1.1 engine.
#include <memory>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/http.hpp>
#include <m0/plugin.hpp>

#include "frontend_config.hpp"
#include "router.hpp"

namespace m0::frontend_http {
namespace {

class http_frontend final : public frontend {
public:
    explicit http_frontend(frontend_config config) : router_(std::move(config)) {}

    void start_worker(worker_context& ctx) override { http::serve(ctx, router_); }

private:
    // One router for all workers: it is read-only once built.
    router router_;
};

std::unique_ptr<frontend> make_http_frontend(plugin_context& ctx) {
    return std::make_unique<http_frontend>(parse_frontend_config(*ctx.section));
}

}  // namespace
}  // namespace m0::frontend_http

M0_FRONTEND_PLUGIN("http", "static files and fixed-response routes", ::m0::frontend_http::make_http_frontend);
