#include "fixed_route.hpp"

#include <algorithm>
#include <memory>

#include <boost/asio/steady_timer.hpp>

#include <m0/static_files/ascii.hpp>

#include "websocket_echo.hpp"

namespace m0::frontend_http {

fixed_route::fixed_route(route_config config) : config_(std::move(config)) {
    for (const auto& m : config_.methods) {
        if (!allow_.empty()) allow_ += ", ";
        allow_ += m;
    }
    echo_has_type_ = std::any_of(config_.headers.begin(), config_.headers.end(),
                                 [](const auto& h) { return http::ascii_iequals(h.name, "Content-Type"); });
}

bool fixed_route::matches_path(std::string_view path) const noexcept {
    if (config_.prefix) return path.substr(0, config_.path.size()) == config_.path;
    return path == config_.path;
}

bool fixed_route::allows(std::string_view method) const noexcept {
    return config_.methods.empty() ||
           std::find(config_.methods.begin(), config_.methods.end(), method) != config_.methods.end();
}

void fixed_route::answer(const http::exchange_ptr& ex) const {
    if (config_.websocket) {
        serve_websocket_echo(ex, *config_.websocket);
        return;
    }
    if (config_.delay.count() == 0) {
        respond_now(*ex);
        return;
    }
    auto timer = std::make_shared<boost::asio::steady_timer>(ex->io(), config_.delay);
    timer->async_wait([this, ex, timer](boost::system::error_code ec) {
        // operation_aborted only when the worker's io_context is being torn
        // down; there is no connection left to answer on.
        if (ec == boost::asio::error::operation_aborted) return;
        respond_now(*ex);
    });
}

void fixed_route::respond_now(http::exchange& ex) const {
    if (!config_.echo) {
        // Straight from the configuration: the head is formatted from the
        // route's headers and the body copied once into the write buffer.
        ex.respond_borrowed(config_.status, config_.headers, config_.body);
        return;
    }
    auto headers = config_.headers;
    if (!echo_has_type_) {
        auto type = ex.req().header("Content-Type");
        headers.push_back({"Content-Type", std::string(type.value_or("application/octet-stream"))});
    }
    ex.respond(config_.status, std::move(headers), ex.req().body);
}

}  // namespace m0::frontend_http
