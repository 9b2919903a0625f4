// Config parsing for the http frontend, kept apart from the runtime: every
// check that can be made before serving is made here, with the error located
// at the YAML node that caused it.
#include "frontend_config.hpp"

#include <algorithm>
#include <cctype>

#include <m0/config.hpp>
#include <m0/static_files/ascii.hpp>
#include <m0/websocket/options_config.hpp>

namespace m0::frontend_http {
namespace {


constexpr std::chrono::nanoseconds max_delay = std::chrono::hours(1);

std::vector<http::response_header> parse_headers(const config_node& route) {
    std::vector<http::response_header> out;
    auto node = route.child("headers");
    if (!node.present()) return out;
    if (!node.is_map()) route.fail("headers", "expected a map of header name to value, e.g. {Content-Type: text/plain}");
    config_errors errors;  // every bad header in one run
    for (const auto& name : node.keys()) {
        errors.check([&] {
            if (!http::is_token(name)) node.fail(name, "not a valid header name");
            if (http::is_engine_owned_header(name))
                node.fail(name, "this header is set by the HTTP engine and cannot be configured");
            auto value = node.string(name, "");
            if (value.find_first_of("\r\n") != std::string::npos || value.find('\0') != std::string::npos)
                node.fail(name, "a header value cannot contain CR, LF or NUL");
            out.push_back({name, std::move(value)});
        });
    }
    errors.throw_if_any();
    return out;
}

std::vector<std::string> parse_methods(const config_node& route) {
    auto listed = route.string_list("method", {"GET", "HEAD"});
    std::vector<std::string> methods;
    for (const auto& m : listed) {
        if (m == "*") return {};  // any method
        if (!http::is_token(m)) route.fail("method", "'" + m + "' is not a valid method name");
        if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
    }
    if (methods.empty()) route.fail("method", "expected at least one method (or \"*\" for any)");
    // A resource that answers GET answers HEAD the same way, minus the body.
    if (std::find(methods.begin(), methods.end(), "GET") != methods.end() &&
        std::find(methods.begin(), methods.end(), "HEAD") == methods.end())
        methods.push_back("HEAD");
    return methods;
}

// `websocket: echo`, or a map with `handler: echo` and the WebSocket keys.
websocket::websocket_options parse_websocket_route(const config_node& route) {
    auto node = route.child("websocket");
    constexpr std::string_view hint = "expected `echo`, or a map such as {handler: echo, max_message_size: 16m}";
    if (node.is_scalar()) {
        if (route.string("websocket", "") != "echo") route.fail("websocket", std::string(hint));
        return websocket::websocket_options{};
    }
    if (!node.is_map()) route.fail("websocket", std::string(hint));
    if (node.string("handler", "") != "echo") node.fail("handler", "expected `echo` (the one native WebSocket handler)");
    return websocket::parse_websocket_options(node, {"handler"});
}

route_config parse_route(const config_node& node) {
    if (!node.is_map()) node.fail("", "expected a route map, e.g. {path: /hello, body: \"Hello, World!\"}");
    // Each key is checked on its own, so one run reports all their errors;
    // a check that involves two keys runs only if both were right.
    config_errors errors;
    errors.check([&] { node.allow_keys({"path", "method", "status", "headers", "body", "echo", "delay", "websocket"}); });
    route_config r;
    errors.check([&] {
        auto path = node.optional_string("path");
        if (!path) node.fail("path", "a route needs a `path`, e.g. /hello");
        if (path->empty() || path->front() != '/') node.fail("path", "expected a path starting with '/'");
        if (path->back() == '*') {
            r.prefix = true;
            path->pop_back();
        }
        if (path->find_first_of("*?# ") != std::string::npos)
            node.fail("path", "expected an exact path, or a prefix ending with a single '*' (no query, no spaces)");
        r.path = std::move(*path);
    });
    errors.check([&] { r.methods = parse_methods(node); });
    if (node.has("websocket")) {
        for (std::string_view other : {"status", "headers", "body", "echo", "delay"})
            errors.check([&] {
                if (node.has(other))
                    node.fail(std::string(other), "a `websocket` route answers with the WebSocket protocol; `" +
                                                      std::string(other) + "` does not apply");
            });
        errors.check([&] { r.websocket = parse_websocket_route(node); });
        errors.throw_if_any();
        return r;
    }
    const bool status_ok =
        errors.check([&] { r.status = static_cast<unsigned>(node.integer("status", 200, 200, 599)); });
    errors.check([&] { r.headers = parse_headers(node); });
    const bool body_ok = errors.check([&] {
        r.echo = node.boolean("echo", false);
        if (r.echo && node.has("body"))
            node.fail("echo", "a route answers with either `body` or the request body (`echo: true`), not both");
        r.body = node.string("body", "");
    });
    if (status_ok && body_ok)
        errors.check([&] {
            if ((r.status == 204 || r.status == 304) && (!r.body.empty() || r.echo))
                node.fail("status", "a " + std::to_string(r.status) + " response has no body");
        });
    errors.check([&] {
        r.delay = node.duration("delay", std::chrono::nanoseconds{0});
        if (r.delay < std::chrono::nanoseconds{0} || r.delay > max_delay)
            node.fail("delay", "expected a duration between 0s and 1h");
    });
    errors.throw_if_any();
    bool has_type = std::any_of(r.headers.begin(), r.headers.end(),
                                [](const auto& h) { return http::ascii_iequals(h.name, "Content-Type"); });
    if (!has_type && !r.echo && !r.body.empty()) r.headers.push_back({"Content-Type", "text/plain"});
    return r;
}

}  // namespace

frontend_config parse_frontend_config(const config_node& section) {
    // Every unknown key, every route's errors and the static mounts' in one run.
    config_errors errors;
    errors.check([&] { section.allow_keys({"type", "routes", "static"}); });
    frontend_config cfg;
    auto routes = section.child("routes");
    if (routes.present() && !routes.is_sequence()) {
        errors.check([&] { section.fail("routes", "expected a list of routes"); });
    } else if (routes.present()) {
        for (const auto& item : routes.items()) errors.check([&] { cfg.routes.push_back(parse_route(item)); });
    }
    errors.check([&] { cfg.statics = static_files::parse_static_mounts(section); });
    errors.throw_if_any();
    return cfg;
}

}  // namespace m0::frontend_http
