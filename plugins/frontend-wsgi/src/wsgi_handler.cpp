// Reactor-side dispatch: static files, mount prefix and url_prefix,
// PATH_INFO decoding.
#include "wsgi_handler.hpp"

#include <charconv>

#include <boost/asio/error.hpp>

namespace m0::wsgi {

namespace {
// The engine validated the value (digits only); a number too large for 64
// bits is over any input_buffer anyway.
std::optional<std::uint64_t> content_length(const http::request& req) {
    auto value = req.header("content-length");
    if (!value) return std::nullopt;
    std::uint64_t n = 0;
    auto r = std::from_chars(value->data(), value->data() + value->size(), n);
    if (r.ec != std::errc()) return UINT64_MAX;
    return n;
}
}  // namespace

bool wsgi_handler::stream_body(const http::request& req) {
    if (!app_.input_streams) return false;
    auto length = content_length(req);
    return !length || *length > app_.config.input_buffer;
}

void wsgi_handler::on_request(http::exchange_ptr ex) {
    if (statics_.serve(ex)) return;
    const http::request& req = ex->req();
    // Under a mount the application's root is the mount's prefix, then
    // url_prefix below it.
    std::string_view path = req.path.substr(req.script_name.size());
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
    if (!req.script_name.empty()) facts.script_name = std::string(req.script_name) + prefix;
    // PEP 3333: PATH_INFO is the decoded path, each byte one latin-1 char.
    auto decoded = http::percent_decode(path);
    if (!decoded) {
        ex->respond(400, {{"Content-Type", "text/plain; charset=utf-8"}}, "Bad Request\n");
        return;
    }
    facts.path_info = std::move(*decoded);
    // REMOTE_* and SERVER_* come from req.remote and req.local, formatted
    // on the executor thread once per connection (environ_templates).
    if (req.scheme == "https") {
        // On a TLS listener or behind a TLS proxy (which the client reached,
        // not this socket): as gunicorn does, the server is the one the
        // client named in Host (port 443 if none).
        facts.https = true;
        set_server_from_host(req, facts);
    }
    if (ex->body_pending()) {
        facts.body_streamed = true;
        facts.streamed_length = content_length(req);
        if (!facts.streamed_length) {
            pull_chunked(std::make_shared<pending_body>(pending_body{std::move(ex), std::move(facts)}));
            return;
        }
    }
    submit(std::move(ex), std::move(facts));
}

void wsgi_handler::set_server_from_host(const http::request& req, request_facts& facts) {
    const auto host = req.header("host");
    if (!host || host->empty()) {
        facts.server_port = 443;
        return;
    }
    // "name", "name:port", "[v6]", "[v6]:port" (the engine checked the syntax).
    const auto close = host->rfind(']');
    const auto colon = host->rfind(':');
    const bool has_port = colon != std::string_view::npos && (close == std::string_view::npos || colon > close);
    facts.server_name = std::string(host->substr(0, has_port ? colon : host->size()));
    facts.server_port = 443;
    if (has_port) {
        unsigned port = 0;
        const auto digits = host->substr(colon + 1);
        const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), port);
        if (r.ec == std::errc() && r.ptr == digits.data() + digits.size() && port > 0 && port <= 65535)
            facts.server_port = static_cast<std::uint16_t>(port);
    }
}

void wsgi_handler::submit(http::exchange_ptr ex, request_facts facts) {
    auto deadline = deadlines_ ? deadlines_->watch(ex) : nullptr;
    lane_.submit(std::make_unique<wsgi_call>(app_, lane_, std::move(ex), std::move(facts), std::move(deadline),
                                             deadlines_));
}

// A chunked body's size is unknown up front: its first input_buffer + 1
// bytes are pulled here, on the reactor. A body that ends within
// input_buffer is then handed to the app whole, with CONTENT_LENGTH, as any
// small body (apps that trust CONTENT_LENGTH alone, such as Django, see
// it); a longer one streams, starting with the bytes pulled.
void wsgi_handler::pull_chunked(std::shared_ptr<pending_body> pending) {
    if (!pending->facts.pulled_body) pending->facts.pulled_body.emplace();
    const std::size_t want = app_.config.input_buffer + 1 - pending->facts.pulled_body->size();
    http::exchange& ex = *pending->ex;
    ex.read_body(want, [this, pending](boost::system::error_code ec, std::string chunk, bool last) {
        if (ec) {
            // 413 / 408 / 400 were answered by the engine, a gone client
            // needs none; a body cut short by the client gets a 400.
            if (ec == boost::asio::error::eof)
                pending->ex->respond(400, {{"Content-Type", "text/plain; charset=utf-8"}}, "Bad Request\n");
            return;
        }
        request_facts& facts = pending->facts;
        facts.pulled_body->append(chunk);
        if (last || facts.pulled_body->size() > app_.config.input_buffer) {
            facts.body_streamed = !last;
            submit(std::move(pending->ex), std::move(facts));
        } else {
            pull_chunked(pending);
        }
    });
}

}  // namespace m0::wsgi
