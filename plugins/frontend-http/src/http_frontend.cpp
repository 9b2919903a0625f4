#include "http_frontend.hpp"

#include <utility>

#include <m0/http.hpp>

namespace m0::frontend_http {

http_frontend::http_frontend(frontend_config config) : router_(std::move(config)) {}

void http_frontend::start_reactor(reactor_context& ctx) { http::serve(ctx, router_); }

}  // namespace m0::frontend_http
