// The plugin's one exported symbol: `frontend.type: http`.
#include <memory>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/plugin.hpp>

#include "frontend_config.hpp"
#include "http_frontend.hpp"

namespace {

std::unique_ptr<m0::frontend> make_http_frontend(m0::plugin_context& ctx) {
    return std::make_unique<m0::frontend_http::http_frontend>(m0::frontend_http::parse_frontend_config(*ctx.section));
}

}  // namespace

M0_FRONTEND_PLUGIN("http", "static files and fixed-response routes", make_http_frontend);
