#pragma once
// The `http` frontend: native handlers (fixed routes, static files) served
// by the core HTTP/1.1 engine.
#include <m0/frontend.hpp>

#include "frontend_config.hpp"
#include "router.hpp"

namespace m0::frontend_http {

class http_frontend final : public frontend {
public:
    explicit http_frontend(frontend_config config);

    void start_reactor(reactor_context& ctx) override;

private:
    // One router for all workers: it is read-only once built.
    router router_;
};

}  // namespace m0::frontend_http
