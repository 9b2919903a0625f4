#pragma once
// A route from `frontend.routes`: a response fixed at start-up (or the
// request's own body, for `echo`), optionally after a delay; or a WebSocket
// echo endpoint (`websocket: echo`).
#include <string>
#include <string_view>

#include <m0/http.hpp>

#include "frontend_config.hpp"

namespace m0::frontend_http {

class fixed_route {
public:
    explicit fixed_route(route_config config);

    bool matches_path(std::string_view path) const noexcept;
    bool allows(std::string_view method) const noexcept;
    // The Allow header value for a 405 on this route's path.
    const std::string& allowed_methods() const noexcept { return allow_; }

    // Reactor thread. With a delay, arms a timer on the exchange's io_context
    // and answers from it; the reactor never blocks.
    void answer(const http::exchange_ptr& ex) const;

private:
    void respond_now(http::exchange& ex) const;

    route_config config_;
    std::string allow_;
    bool echo_has_type_ = false;  // a configured Content-Type wins over the request's
};

}  // namespace m0::frontend_http
