#include "router.hpp"

#include <algorithm>

#include "status_response.hpp"

namespace m0::frontend_http {

router::router(frontend_config config) {
    routes_.reserve(config.routes.size());
    for (auto& r : config.routes) routes_.emplace_back(std::move(r));
    for (const auto& s : config.statics) statics_.push_back(std::make_unique<static_files>(s));
    std::stable_sort(statics_.begin(), statics_.end(),
                     [](const auto& a, const auto& b) { return a->prefix().size() > b->prefix().size(); });
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
        respond_status(*ex, 405, {{"Allow", path_only->allowed_methods()}});
        return;
    }
    for (const auto& mount : statics_) {
        if (mount->matches(req.path)) {
            mount->serve(ex);
            return;
        }
    }
    respond_status(*ex, 404);
}

}  // namespace m0::frontend_http
