// Reactor-side dispatch: static files, url_prefix, PATH_INFO decoding.
#include "wsgi_handler.hpp"

namespace m0::wsgi {

void wsgi_handler::on_request(http::exchange_ptr ex) {
    if (statics_.serve(ex)) return;
    const http::request& req = ex->req();
    std::string_view path = req.path;
    const std::string& prefix = app_.config.url_prefix;
    if (!prefix.empty()) {
        bool under = path.substr(0, prefix.size()) == prefix &&
                     (path.size() == prefix.size() || path[prefix.size()] == '/');
        if (!under) {
            ex->respond(404, {{"Content-Type", "text/plain; charset=utf-8"}}, "Not Found\n");
            return;
        }
        path.remove_prefix(prefix.size());
    }
    request_facts facts;
    // PEP 3333: PATH_INFO is the decoded path, each byte one latin-1 char.
    auto decoded = http::percent_decode(path);
    if (!decoded) {
        ex->respond(400, {{"Content-Type", "text/plain; charset=utf-8"}}, "Bad Request\n");
        return;
    }
    facts.path_info = std::move(*decoded);
    facts.remote_addr = req.remote.address().to_string();
    facts.remote_port = req.remote.port();
    facts.server_name = req.local.address().to_string();
    facts.server_port = req.local.port();
    lane_.submit(std::make_unique<wsgi_call>(app_, std::move(ex), std::move(facts)));
}

}  // namespace m0::wsgi
