// The plugin's one exported symbol: `frontend.type: wsgi`.
#include <memory>

#include <m0/frontend.hpp>
#include <m0/plugin.hpp>

#include "wsgi_frontend.hpp"

namespace {

std::unique_ptr<m0::frontend> make_wsgi_frontend(m0::plugin_context& ctx) {
    return std::make_unique<m0::wsgi::wsgi_frontend>(ctx);
}

}  // namespace

M0_FRONTEND_PLUGIN("wsgi", "PEP 3333 applications (Django, Flask) on embedded CPython", make_wsgi_frontend);
