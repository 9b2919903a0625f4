#pragma once
// The reactor side of the WSGI frontend: no GIL, no Python objects. Serves
// static mounts natively and turns every other request into a wsgi_call job
// on the reactor's executor lane.
#include <memory>

#include <m0/deadline.hpp>
#include <m0/executor.hpp>
#include <m0/http.hpp>
#include <m0/static_files/static_mount.hpp>

#include "wsgi_call.hpp"

namespace m0::wsgi {

class wsgi_handler final : public http::handler {
public:
    wsgi_handler(application& app, const static_files::static_mounts& statics, executor_lane& lane,
                 deadline_watch* deadlines)
        : app_(app), statics_(statics), lane_(lane), deadlines_(deadlines) {}
    void on_request(http::exchange_ptr ex) override;
    // A body larger than input_buffer streams through wsgi.input (a chunked
    // one, of unknown size, is pulled up to input_buffer before deciding),
    // unless the executor runs jobs on the reactor.
    bool stream_body(const http::request& req) override;

private:
    struct pending_body {
        http::exchange_ptr ex;
        request_facts facts;
    };
    void submit(http::exchange_ptr ex, request_facts facts);
    // facts.server_name / server_port from the Host header, for a request
    // whose client spoke TLS to a proxy.
    static void set_server_from_host(const http::request& req, request_facts& facts);
    void pull_chunked(std::shared_ptr<pending_body> pending);

    application& app_;
    const static_files::static_mounts& statics_;
    executor_lane& lane_;
    deadline_watch* deadlines_;  // null: no request deadline
};

}  // namespace m0::wsgi
