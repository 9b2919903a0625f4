#include "router.hpp"

#include <m0/static_files/status_response.hpp>

namespace m0::frontend_http {

router::router(frontend_config config) : statics_(config.statics) {
    routes_.reserve(config.routes.size());
    for (auto& r : config.routes) routes_.emplace_back(std::move(r));
}

void router::on_request(http::exchange_ptr ex) {
    const auto& req = ex->req();
    const fixed_route* path_only = nullptr;  // path matched, method did not
    for (const auto& route : routes_) {
        if (!route.matches_path(req.path)) continue;
        if (route.allows(req.method)) {
            route.answer(ex);
            return;
        }
        if (path_only == nullptr) path_only = &route;
    }
    if (path_only != nullptr) {
        static_files::respond_status(*ex, 405, {{"Allow", path_only->allowed_methods()}});
        return;
    }
    if (statics_.serve(ex)) return;
    static_files::respond_status(*ex, 404);
}

}  // namespace m0::frontend_http
