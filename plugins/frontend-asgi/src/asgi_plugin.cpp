// The plugin's one exported symbol: `frontend.type: asgi`.
#include <memory>

#include <m0/frontend.hpp>
#include <m0/plugin.hpp>

#include "asgi_frontend.hpp"

namespace {

std::unique_ptr<m0::frontend> make_asgi_frontend(m0::plugin_context& ctx) {
    return std::make_unique<m0::asgi::asgi_frontend>(ctx);
}

}  // namespace

M0_FRONTEND_PLUGIN("asgi", "ASGI 3 applications (FastAPI, Starlette) on the asyncio executor", make_asgi_frontend);
