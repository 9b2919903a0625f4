#pragma once
// The http frontend's request handler: fixed routes first (in file order),
// then static mounts (longest prefix first), else 404.
#include <vector>

#include <m0/http.hpp>
#include <m0/static_files/static_mount.hpp>

#include "fixed_route.hpp"
#include "frontend_config.hpp"

namespace m0::frontend_http {

class router final : public http::handler {
public:
    explicit router(frontend_config config);
    // Reactor thread; shared by every worker, so it only reads its state.
    void on_request(http::exchange_ptr ex) override;

private:
    std::vector<fixed_route> routes_;
    static_files::static_mounts statics_;
};

}  // namespace m0::frontend_http
