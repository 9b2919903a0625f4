#include "config/server_config.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <thread>

#include <boost/asio/ip/address.hpp>

#include "config/config_values.hpp"

namespace m0 {
namespace {

constexpr unsigned max_threads = 256;
constexpr unsigned max_workers = 256;

unsigned default_threads() {
    const unsigned cpus = std::thread::hardware_concurrency();
    return cpus == 0 ? 1 : std::min(cpus, max_threads);
}

std::chrono::milliseconds millis(std::chrono::nanoseconds value) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(value);
}

void parse_server(const config_node& server, server_config& out) {
    server.allow_keys({"listen", "workers", "threads", "listener", "pin_cores", "drain_timeout"});
    const auto listen = server.child("listen");
    const auto texts = server.string_list("listen", {"127.0.0.1:8000"});
    if (texts.empty()) server.fail("listen", "expected at least one address, found an empty list");
    const auto items = listen.is_sequence() ? listen.items() : std::vector<config_node>{};
    for (std::size_t i = 0; i < texts.size(); ++i)
        out.listen.push_back({texts[i], parse_listen_address(texts[i], items.empty() ? listen : items[i])});

    out.workers = static_cast<unsigned>(server.integer("workers", 1, 1, max_workers));
    out.threads = static_cast<unsigned>(server.integer("threads", default_threads(), 1, max_threads));
    out.listener = server.one_of("listener", "reuseport", {"reuseport", "shared"});
    // Each serving process binds listeners of its own; one listener shared
    // by all threads exists only within one process.
    if (out.workers > 1 && out.listener == "shared")
        server.fail("listener", "'shared' needs one serving process, but server.workers is " +
                                    std::to_string(out.workers) +
                                    " (set server.listener: reuseport, or server.workers: 1)");
    out.pin_cores = server.boolean("pin_cores", true);
    out.drain_timeout = millis(server.duration("drain_timeout", std::chrono::seconds(30)));
}

void parse_plugins(const config_node& plugins, server_config& out) {
    plugins.allow_keys({"path"});
    const std::filesystem::path base = plugins.child("path").base_dir();
    for (const auto& dir : plugins.string_list("path", {}))
        out.plugin_paths.push_back((base / dir).lexically_normal().string());
}

void parse_frontend(const config_node& root, server_config& out) {
    const auto frontend = root.child("frontend");
    if (!frontend.present()) {
        out.frontend_type = frontend.string("type", "http");
        return;
    }
    const auto type = frontend.optional_string("type");
    if (!type || type->empty()) frontend.fail("type", "required: the frontend plugin to serve with (e.g. 'http')");
    out.frontend_type = *type;
}

void parse_executor(const config_node& executor, server_config& out) {
    out.executor_type = executor.optional_string("type").value_or("");
    // Keys other than `type` belong to the chosen executor's plugin, which
    // validates them; here only the subsection's name must match the type.
    for (const auto& key : executor.keys()) {
        if (key == "type" || key == out.executor_type) continue;
        if (nearest_key(key, {"type"})) executor.fail(key, "unknown key '" + key + "' (did you mean 'type'?)");
        executor.fail(key, out.executor_type.empty()
                               ? "settings for executor '" + key + "' but executor.type is not set (add 'type: " + key + "')"
                               : "settings for executor '" + key + "' but executor.type is '" + out.executor_type +
                                     "' (only a subsection named '" + out.executor_type + "' is allowed)");
    }
}

void parse_http(const config_node& http, http_limits& out) {
    http.allow_keys({"max_request_line", "max_header_size", "max_header_count", "max_header_bytes", "max_body_size",
                     "header_timeout", "body_timeout", "write_timeout", "keepalive_timeout",
                     "max_requests_per_connection", "max_connections_per_worker"});
    constexpr std::uint64_t u32 = std::numeric_limits<std::uint32_t>::max();
    const auto size32 = [&](const char* key, std::uint32_t def) {
        return static_cast<std::uint32_t>(http.byte_size(key, def, u32));
    };
    const auto count32 = [&](const char* key, std::uint32_t def, std::int64_t min) {
        return static_cast<std::uint32_t>(http.integer(key, def, min, u32));
    };
    out.max_request_line = size32("max_request_line", out.max_request_line);
    out.max_header_size = size32("max_header_size", out.max_header_size);
    out.max_header_count = count32("max_header_count", out.max_header_count, 1);
    out.max_header_bytes = size32("max_header_bytes", out.max_header_bytes);
    out.max_body_size = http.byte_size("max_body_size", out.max_body_size, std::numeric_limits<std::uint64_t>::max());
    out.header_timeout = millis(http.duration("header_timeout", out.header_timeout));
    out.body_timeout = millis(http.duration("body_timeout", out.body_timeout));
    out.write_timeout = millis(http.duration("write_timeout", out.write_timeout));
    out.keepalive_timeout = millis(http.duration("keepalive_timeout", out.keepalive_timeout));
    out.max_requests_per_connection = count32("max_requests_per_connection", out.max_requests_per_connection, 0);
    out.max_connections_per_worker = count32("max_connections_per_worker", out.max_connections_per_worker, 1);
}

}  // namespace

server_config parse_server_config(const config_node& root) {
    server_config out;
    for (const auto& key : root.keys())
        if (std::find(core_sections.begin(), core_sections.end(), key) == core_sections.end())
            out.module_sections.push_back(key);
    parse_server(root.child("server"), out);
    parse_plugins(root.child("plugins"), out);
    parse_frontend(root, out);
    parse_executor(root.child("executor"), out);
    parse_http(root.child("http"), out.http);
    const auto log = root.child("log");
    log.allow_keys({"level"});
    out.log_level = log.one_of("level", "info", {"debug", "info", "warning", "error"});
    return out;
}

boost::asio::ip::tcp::endpoint parse_listen_address(const std::string& text, const config_node& at) {
    const auto bad = [&](const std::string& why) {
        at.fail("", "expected 'host:port' or '[ipv6]:port' with an IP address or localhost as host, found '" + text +
                        "' (" + why + ")");
    };
    std::string host, port;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string::npos) bad("no closing ']'");
        if (close + 1 >= text.size() || text[close + 1] != ':') bad("missing port after ']'");
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos) bad("missing port");
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string::npos) bad("write an IPv6 address in brackets, e.g. [::1]:8000");
    }
    const auto number = config_detail::parse_integer(port);
    if (!number || *number < 0 || *number > 65535 || port.front() == '+') bad("port must be 0..65535");
    if (host == "localhost") host = "127.0.0.1";
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    if (ec || host.empty()) bad("'" + host + "' is not an IP address");
    return {address, static_cast<unsigned short>(*number)};
}

}  // namespace m0
