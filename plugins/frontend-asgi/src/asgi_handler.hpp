#pragma once
// The reactor side of the ASGI frontend: no GIL, no Python objects. Turns
// each request into an asgi_call job on the reactor's lane.
#include <m0/deadline.hpp>
#include <m0/executor.hpp>
#include <m0/http.hpp>

#include "asgi_call.hpp"

namespace m0::asgi {

class asgi_handler final : public http::handler {
public:
    asgi_handler(application& app, executor_lane& lane, deadline_watch* deadlines)
        : app_(app), lane_(lane), deadlines_(deadlines) {}
    void on_request(http::exchange_ptr ex) override;
    // A body over input_buffer (or chunked, of unknown size) streams:
    // receive() pulls it piece by piece as the app awaits it.
    bool stream_body(const http::request& req) override;

private:
    application& app_;
    executor_lane& lane_;
    deadline_watch* deadlines_;  // null: no request deadline (the websocket scope never has one)
};

}  // namespace m0::asgi
