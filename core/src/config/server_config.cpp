#include "config/server_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <thread>

#include <boost/asio/ip/address.hpp>

#include "config/config_values.hpp"
#include "telemetry/access_log_format.hpp"

namespace m0 {
namespace {

constexpr unsigned max_threads = 256;
constexpr unsigned max_workers = 256;
constexpr std::int64_t max_integer = std::numeric_limits<std::int64_t>::max();

// Reactor threads per serving process when server.threads is not set: the
// CPUs shared out among the processes, so that `--workers N` alone runs one
// reactor per core in all and no process's reactors take turns on a core with
// another's (measured in docs/benchmarks/django_pg.md, "server.threads, batch_sched and
// the pool's threads", issue 23: two processes of two
// reactors each on 2 cores served a Django app 0.88x the best peer, of one
// each 1.03x).
unsigned default_threads(unsigned workers) {
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    return std::clamp(cpus / std::max(1u, workers), 1u, max_threads);
}

std::chrono::milliseconds millis(std::chrono::nanoseconds value) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(value);
}

// "HOST:PORT" followed by options separated by spaces: `proxy` (connections
// start with a PROXY protocol header), `tls` (they speak TLS, configured by
// the `tls:` section), `h1` or `h2` (HTTP/1.1 only, or HTTP/2 too, whatever
// http2.enabled says).
// "unix:PATH"'s own options: mode=0660 (octal), owner=USER[:GROUP], group=GROUP.
bool parse_unix_option(const std::string& option, const std::string& text, unix_socket_spec& spec,
                       const config_node& at) {
    const auto eq = option.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = option.substr(0, eq), value = option.substr(eq + 1);
    if (key == "mode") {
        char* end = nullptr;
        const long mode = std::strtol(value.c_str(), &end, 8);
        if (value.empty() || *end != '\0' || mode < 0 || mode > 07777)
            at.fail("", "'" + text + "': mode=" + value + " is not an octal file mode (e.g. mode=0660)");
        spec.mode = static_cast<int>(mode);
    } else if (key == "owner") {
        const auto colon = value.find(':');
        spec.owner = value.substr(0, colon);
        if (colon != std::string::npos) spec.group = value.substr(colon + 1);
        if (value.empty()) at.fail("", "'" + text + "': owner= needs a user (owner=www-data or owner=www-data:www-data)");
    } else if (key == "group") {
        spec.group = value;
    } else {
        return false;
    }
    return true;
}

listen_address parse_listen_entry(const std::string& text, const config_node& at) {
    static const std::vector<std::string> options = {"proxy", "tls", "h1", "h2"};
    listen_address out;
    out.text = text;
    std::size_t end = text.find(' ');
    const std::string address = text.substr(0, end);
    if (address.rfind("unix:", 0) == 0) {
        out.unix.emplace();
        out.unix->path = address.substr(5);
        if (out.unix->path.empty()) at.fail("", "'" + text + "': expected unix:PATH, the socket file's path");
        // Removed at exit from wherever m0 then is.
        out.unix->path = std::filesystem::absolute(out.unix->path).lexically_normal().string();
        if (out.unix->path.size() > 107)
            at.fail("", "'" + text + "': a Unix socket path is at most 107 bytes long");
    } else {
        out.endpoint = parse_listen_address(address, at);
    }
    while (end != std::string::npos) {
        const std::size_t start = text.find_first_not_of(' ', end);
        if (start == std::string::npos) break;
        end = text.find(' ', start);
        const std::string option = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (out.unix && parse_unix_option(option, text, *out.unix, at)) continue;
        if (option == "proxy") {
            out.proxy_protocol = true;
        } else if (option == "tls") {
            out.tls = true;
        } else if (option == "h1" || option == "h2") {
            if (out.http2 && *out.http2 != (option == "h2"))
                at.fail("", "'" + text + "' is marked both h1 and h2: choose one");
            out.http2 = option == "h2";
        } else {
            std::string msg = "unknown listen option '" + option + "' in '" + text + "'";
            if (auto near = nearest_key(option, options)) msg += " (did you mean '" + *near + "'?)";
            else msg += " (the options are 'proxy': connections start with a PROXY protocol header, 'tls': "
                        "they speak TLS, configured by the tls: section, and 'h1' / 'h2': HTTP/1.1 only, or "
                        "HTTP/2 too; for unix:PATH also mode=0660 and owner=USER[:GROUP])";
            at.fail("", msg);
        }
    }
    return out;
}

// server.forwarded_allow_ips: a list of addresses and CIDR blocks, or "*".
http::trusted_networks parse_forwarded_allow_ips(const config_node& server) {
    const auto node = server.child("forwarded_allow_ips");
    const auto texts = server.string_list("forwarded_allow_ips", default_forwarded_allow_ips);
    const auto items = node.is_sequence() ? node.items() : std::vector<config_node>{};
    std::vector<http::ip_network> nets;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const auto& at = items.empty() ? node : items[i];
        if (texts[i] == "*") {
            if (texts.size() > 1) at.fail("", "'*' trusts every peer: it cannot be combined with other entries");
            return http::trusted_networks({}, true);
        }
        std::string why;
        // "unix:": clients on a Unix socket. They have no address, and the
        // HTTP engine reads theirs (an unnamed AF_UNIX peer: the family
        // alone, into a zeroed TCP endpoint) as "::", which no TCP peer is.
        const auto net = http::ip_network::parse(texts[i] == "unix:" ? "::/128" : texts[i], why);
        if (!net)
            at.fail("", "expected an IP address or a CIDR block ('10.0.0.0/8', 'fd00::/8'), 'unix:' or '*', found '" +
                            texts[i] + "': " + why);
        nets.push_back(*net);
    }
    return http::trusted_networks(std::move(nets));
}

// Each key is checked on its own; a check that involves several keys runs
// only if each of them was right, so one mistake is reported once.
void parse_server(const config_node& server, server_config& out, config_errors& errors) {
    errors.check([&] {
        server.allow_keys({"listen", "workers", "threads", "listener", "pin_cores", "drain_timeout", "max_requests",
                           "max_requests_jitter", "max_rss", "pid_file", "forwarded_allow_ips", "request_timeout",
                           "max_written_off"});
    });
    errors.check([&] {
        const auto listen = server.child("listen");
        const auto texts = server.string_list("listen", {"127.0.0.1:8000"});
        if (texts.empty()) server.fail("listen", "expected at least one address, found an empty list");
        const auto items = listen.is_sequence() ? listen.items() : std::vector<config_node>{};
        for (std::size_t i = 0; i < texts.size(); ++i)
            out.listen.push_back(parse_listen_entry(texts[i], items.empty() ? listen : items[i]));
    });
    errors.check([&] { out.forwarded_allow_ips = parse_forwarded_allow_ips(server); });

    const bool workers_ok =
        errors.check([&] { out.workers = static_cast<unsigned>(server.integer("workers", 1, 1, max_workers)); });
    errors.check([&] {
        out.threads = static_cast<unsigned>(
            server.integer("threads", default_threads(workers_ok ? out.workers : 1), 1, max_threads));
    });
    // The older spelling of scheduler.listener, read by the scheduler plugin;
    // checked here so that its errors point at it, and not printed by
    // --check unless given (scheduler.listener is).
    errors.check([&] {
        if (server.has("listener")) out.listener = server.one_of("listener", "reuseport", {"reuseport", "shared"});
    });
    errors.check([&] { out.pin_cores = server.boolean("pin_cores", true); });
    errors.check([&] { out.drain_timeout = millis(server.duration("drain_timeout", std::chrono::seconds(30))); });
    errors.check([&] { out.request_timeout = server.duration("request_timeout", default_request_timeout); });
    errors.check([&] {
        out.max_written_off = static_cast<unsigned>(server.integer("max_written_off", 4, 1, 64));
    });
    const bool requests_ok = errors.check([&] {
        out.max_requests = static_cast<std::uint64_t>(server.integer("max_requests", 0, 0, max_integer));
    });
    errors.check([&] {
        out.max_requests_jitter = static_cast<std::uint64_t>(server.integer("max_requests_jitter", 0, 0, max_integer));
        if (requests_ok && out.max_requests_jitter > 0 && out.max_requests == 0)
            server.fail("max_requests_jitter", "needs server.max_requests (the jitter is added to it)");
    });
    const bool rss_ok =
        errors.check([&] { out.max_rss = server.byte_size("max_rss", 0, std::numeric_limits<std::uint64_t>::max()); });
    // Both are the supervisor's to act on.
    if (workers_ok && requests_ok && rss_ok)
        errors.check([&] {
            if (out.workers == 1 && (out.max_requests > 0 || out.max_rss > 0))
                server.fail(out.max_requests > 0 ? "max_requests" : "max_rss",
                            "a serving process is replaced by its supervisor, which needs server.workers > 1 (it is 1)");
        });
    errors.check([&] {
        if (const auto file = server.optional_string("pid_file")) {
            if (file->empty()) server.fail("pid_file", "expected a file path, found an empty string");
            const std::filesystem::path base = server.child("pid_file").base_dir();
            out.pid_file = (base / *file).lexically_normal().string();
        }
    });
}

// Only `type` is the core's; the chosen scheduler's plugin checks the rest.
void parse_scheduler(const config_node& scheduler, server_config& out) {
    if (scheduler.present() && !scheduler.is_map())
        scheduler.fail("", "expected a map with the scheduler's 'type' and settings, e.g. '{type: balanced}'");
    out.scheduler_type = scheduler.string("type", "reactors");
    if (out.scheduler_type.empty())
        scheduler.fail("type", "expected the scheduler plugin to run the reactors with (e.g. 'reactors' or 'balanced')");
}

void parse_plugins(const config_node& plugins, server_config& out) {
    plugins.allow_keys({"path"});
    const std::filesystem::path base = plugins.child("path").base_dir();
    for (const auto& dir : plugins.string_list("path", {}))
        out.plugin_paths.push_back((base / dir).lexically_normal().string());
    // --check prints a config valid from anywhere.
    if (!out.plugin_paths.empty()) plugins.set_effective("path", out.plugin_paths);
}

void parse_frontend(const config_node& root, server_config& out) {
    const auto frontend = root.child("frontend");
    if (!frontend.present()) {
        // With mounts every frontend is a mount's; nothing to default here.
        if (!root.child("mounts").present()) out.frontend_type = frontend.string("type", "http");
        return;
    }
    const auto type = frontend.optional_string("type");
    if (!type || type->empty()) frontend.fail("type", "required: the frontend plugin to serve with (e.g. 'http')");
    out.frontend_type = *type;
}

// Keys of an executor's section (`executor:` or an entry of `executors:`)
// other than `type` belong to the chosen executor's plugin, which validates
// them; here only the subsection's name must match the type. Without a type
// (only in `executor:`, whose type defaults to the frontend's) the name is
// checked once the frontend is known: check_default_executor_settings.
void check_executor_subsections(const config_node& executor, const std::string& type) {
    const std::string type_key = executor.path() + ".type";
    for (const auto& key : executor.keys()) {
        if (key == "type" || key == type) continue;
        if (nearest_key(key, {"type"})) executor.fail(key, "unknown key '" + key + "' (did you mean 'type'?)");
        if (type.empty()) continue;
        executor.fail(key, "settings for executor '" + key + "' but " + type_key + " is '" + type +
                               "' (only a subsection named '" + type + "' is allowed)");
    }
}

void parse_executor(const config_node& executor, server_config& out) {
    out.executor_type = executor.optional_string("type").value_or("");
    check_executor_subsections(executor, out.executor_type);
}

void parse_executors(const config_node& root, server_config& out) {
    const auto executors = root.child("executors");
    if (executors.present() && !executors.is_map())
        executors.fail("", "expected a map of executor names to their settings, e.g. 'app: {type: pool}'");
    for (const auto& name : executors.keys()) {
        const auto entry = executors.child(name);
        if (name == "default")
            executors.fail(name, "'default' names the executor of the 'executor:' key; choose another name");
        if (!entry.is_map()) entry.fail("", "expected a map with the executor's 'type', e.g. '{type: pool}'");
        const auto type = entry.optional_string("type");
        if (!type || type->empty()) entry.fail("type", "required: the executor to build (e.g. 'pool' or 'inline')");
        check_executor_subsections(entry, *type);
        out.executors.push_back({name, *type});
    }
    if (!out.executor_type.empty()) out.executors.push_back({"default", out.executor_type});
}

void parse_mounts(const config_node& root, server_config& out) {
    const auto mounts = root.child("mounts");
    if (!mounts.present()) return;
    if (root.child("frontend").present())
        mounts.fail("", "'mounts' and 'frontend' cannot both be set (serve the frontend as a mount with 'prefix: /')");
    const auto items = mounts.items();
    if (items.empty()) mounts.fail("", "expected a list of mounts ({prefix, frontend, executor}), found none");
    std::vector<std::string> names;
    for (const auto& e : out.executors) names.push_back(e.name);
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto& item = items[i];
        if (!item.is_map()) item.fail("", "expected a map with 'prefix' and 'frontend' (and optionally 'executor')");
        item.allow_keys({"prefix", "frontend", "executor", "request_timeout"});
        mount_config m;
        m.index = i;
        const auto prefix = item.optional_string("prefix");
        if (!prefix) item.fail("prefix", "required: the path prefix this mount serves (e.g. '/api', or '/')");
        std::string why;
        const auto normal = normalize_mount_prefix(*prefix, why);
        if (!normal) item.fail("prefix", "'" + *prefix + "' is not a path prefix: " + why);
        m.prefix = *normal;
        for (const auto& other : out.mounts)
            if (other.prefix == m.prefix)
                item.fail("prefix", "'" + *prefix + "' is already mounted by mounts[" + std::to_string(other.index) + "]");
        const auto frontend = item.child("frontend");
        if (!frontend.present()) item.fail("frontend", "required: the frontend serving this mount, e.g. '{type: http}'");
        if (!frontend.is_map()) frontend.fail("", "expected a map with the frontend's 'type' and settings");
        const auto type = frontend.optional_string("type");
        if (!type || type->empty()) frontend.fail("type", "required: the frontend plugin to serve with (e.g. 'http')");
        m.frontend_type = *type;
        if (item.has("request_timeout")) m.request_timeout = item.duration("request_timeout", std::chrono::nanoseconds(0));
        if (const auto name = item.optional_string("executor")) {
            if (std::find(names.begin(), names.end(), *name) == names.end()) {
                std::string msg = "unknown executor '" + *name + "'";
                if (const auto near = nearest_key(*name, names))
                    msg += " (did you mean '" + *near + "'?)";
                else if (names.empty())
                    msg += ": declare it under 'executors:' (e.g. 'executors: {" + *name + ": {type: pool}}')";
                else
                    msg += " (not declared under 'executors:')";
                item.fail("executor", msg);
            }
            m.executor = *name;
        }
        out.mounts.push_back(std::move(m));
    }
}

// An executor no frontend uses would only run idle threads: most likely a
// mount names another by mistake.
void check_executors_used(const config_node& root, const server_config& out) {
    for (const auto& e : out.executors) {
        const bool used = out.mounts.empty()
                              ? e.name == "default"
                              : std::any_of(out.mounts.begin(), out.mounts.end(),
                                            [&](const mount_config& m) { return m.executor == e.name; });
        if (used) continue;
        if (e.name == "default")
            root.child("executor").fail("", "the executor of the 'executor:' key is used by no mount (a mount uses it "
                                            "with 'executor: default')");
        root.child("executors").fail(e.name, out.mounts.empty()
                                                 ? "executor '" + e.name + "' is used by nothing: without 'mounts:' the "
                                                   "frontend runs on the 'executor:' key's executor"
                                                 : "executor '" + e.name + "' is used by no mount (add 'executor: " +
                                                       e.name + "' to a mount, or remove it)");
    }
}

// Every key on its own: none depends on another.
void parse_http(const config_node& http, http_limits& out, config_errors& errors) {
    errors.check([&] {
        http.allow_keys({"max_request_line", "max_header_size", "max_header_count", "max_header_bytes",
                         "max_body_size", "header_timeout", "body_timeout", "write_timeout", "keepalive_timeout",
                         "max_requests_per_connection", "max_connections_per_reactor"});
    });
    constexpr std::uint64_t u32 = std::numeric_limits<std::uint32_t>::max();
    const auto size32 = [&](const char* key, std::uint32_t& field) {
        errors.check([&] { field = static_cast<std::uint32_t>(http.byte_size(key, field, u32)); });
    };
    const auto count32 = [&](const char* key, std::uint32_t& field, std::int64_t min) {
        errors.check([&] { field = static_cast<std::uint32_t>(http.integer(key, field, min, u32)); });
    };
    const auto timeout = [&](const char* key, std::chrono::milliseconds& field) {
        errors.check([&] { field = millis(http.duration(key, field)); });
    };
    size32("max_request_line", out.max_request_line);
    size32("max_header_size", out.max_header_size);
    count32("max_header_count", out.max_header_count, 1);
    size32("max_header_bytes", out.max_header_bytes);
    errors.check([&] {
        out.max_body_size = http.byte_size("max_body_size", out.max_body_size, std::numeric_limits<std::uint64_t>::max());
    });
    timeout("header_timeout", out.header_timeout);
    timeout("body_timeout", out.body_timeout);
    timeout("write_timeout", out.write_timeout);
    timeout("keepalive_timeout", out.keepalive_timeout);
    count32("max_requests_per_connection", out.max_requests_per_connection, 0);
    count32("max_connections_per_reactor", out.max_connections_per_reactor, 1);
}

void parse_http2(const config_node& h2, http2::settings& out, config_errors& errors) {
    errors.check([&] {
        h2.allow_keys({"enabled", "websocket", "max_concurrent_streams", "initial_window_size", "max_frame_size",
                       "max_header_list_size", "max_header_count", "ping_interval", "ping_timeout",
                       "max_requests_per_connection", "reset_burst", "reset_rate"});
    });
    const auto count32 = [&](const char* key, std::uint32_t& field, std::int64_t min, std::int64_t max) {
        errors.check([&] { field = static_cast<std::uint32_t>(h2.integer(key, field, min, max)); });
    };
    const auto size32 = [&](const char* key, std::uint32_t& field, std::uint64_t min, std::uint64_t max) {
        errors.check([&] {
            const auto v = h2.byte_size(key, field, max);
            if (v < min) h2.fail(key, "expected at least " + std::to_string(min) + " bytes, found " + std::to_string(v));
            field = static_cast<std::uint32_t>(v);
        });
    };
    const auto timeout = [&](const char* key, std::chrono::milliseconds& field) {
        errors.check([&] { field = millis(h2.duration(key, field)); });
    };
    errors.check([&] { out.enabled = h2.boolean("enabled", out.enabled); });
    errors.check([&] { out.websocket = h2.boolean("websocket", out.websocket); });
    count32("max_concurrent_streams", out.max_concurrent_streams, 1, 100000);
    // RFC 9113 6.5.2: the window at most 2^31-1, a frame 16 KiB to 16 MiB - 1.
    size32("initial_window_size", out.initial_window_size, 0, 0x7fffffff);
    size32("max_frame_size", out.max_frame_size, 16384, 16777215);
    size32("max_header_list_size", out.max_header_list_size, 1024, 16 * 1024 * 1024);
    count32("max_header_count", out.max_header_count, 1, 100000);
    timeout("ping_interval", out.ping_interval);
    timeout("ping_timeout", out.ping_timeout);
    count32("max_requests_per_connection", out.max_requests_per_connection, 0, std::numeric_limits<std::uint32_t>::max());
    count32("reset_burst", out.reset_burst, 1, 1000000);
    count32("reset_rate", out.reset_rate, 1, 1000000);
}

// log.access: a boolean or a format string, which access_format must allow.
void parse_access_log(const config_node& log, server_config& out) {
    const auto access = log.child("access");
    bool custom = false;
    if (access.present() && access.is_scalar()) {
        std::string text = access.as_string();
        std::string low = text;
        for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        static const std::vector<std::string> words = {"true", "false", "yes", "no", "on", "off"};
        if (std::find(words.begin(), words.end(), low) == words.end()) {
            custom = true;
            out.access_log = true;
            out.access_log_format = std::move(text);
        }
    }
    if (!custom) out.access_log = log.boolean("access", false);
    if (custom && out.access_log_json)
        access.fail("", "a format string and 'log.access_format: json' exclude each other: JSON lines have fixed keys");
    if (out.access_log && !out.access_log_json && !custom)
        out.access_log_format = std::string(telemetry::access_log_format::gunicorn_default);
    if (custom) {
        try {
            (void)telemetry::access_log_format::text(out.access_log_format);
        } catch (const std::invalid_argument& e) {
            access.fail("", e.what());
        }
    }
}

void parse_log(const config_node& log, server_config& out, config_errors& errors) {
    errors.check([&] { log.allow_keys({"level", "access", "access_format", "access_file"}); });
    errors.check([&] { out.log_level = log.one_of("level", "info", {"debug", "info", "warning", "error"}); });
    const bool format_ok = errors.check(
        [&] { out.access_log_json = log.one_of("access_format", "text", {"text", "json"}) == "json"; });
    if (format_ok) errors.check([&] { parse_access_log(log, out); });
    errors.check([&] {
        if (const auto file = log.optional_string("access_file")) {
            if (file->empty()) log.fail("access_file", "expected a file path, found an empty string");
            const std::filesystem::path base = log.child("access_file").base_dir();
            out.access_log_file = (base / *file).lexically_normal().string();
            log.set_effective("access_file", out.access_log_file);  // --check prints a config valid from anywhere
        }
    });
}

void parse_metrics(const config_node& metrics, server_config& out, config_errors& errors) {
    errors.check([&] { metrics.allow_keys({"listen"}); });
    errors.check([&] {
        if (const auto text = metrics.optional_string("listen"))
            out.metrics_listen = listen_address{*text, parse_listen_address(*text, metrics.child("listen")), false,
                                                false, std::nullopt, std::nullopt};
    });
}

}  // namespace

server_config parse_server_config(const config_node& root, config_errors& errors) {
    server_config out;
    for (const auto& key : root.keys())
        if (std::find(core_sections.begin(), core_sections.end(), key) == core_sections.end())
            out.module_sections.push_back(key);
    // Every key of server, plugins, http, log and metrics is checked on its
    // own. The checks of frontend/executor/executors/mounts depend on each
    // other (mounts name executors), so within that group the first error stops.
    parse_server(root.child("server"), out, errors);
    errors.check([&] { parse_plugins(root.child("plugins"), out); });
    errors.check([&] { parse_scheduler(root.child("scheduler"), out); });
    out.frontend_group_valid = errors.check([&] {
        parse_frontend(root, out);
        parse_executor(root.child("executor"), out);
        parse_executors(root, out);
        parse_mounts(root, out);
        check_executors_used(root, out);
    });
    parse_http(root.child("http"), out.http, errors);
    parse_http2(root.child("http2"), out.http2, errors);
    parse_log(root.child("log"), out, errors);
    parse_metrics(root.child("metrics"), out, errors);
    return out;
}

server_config parse_server_config(const config_node& root) {
    config_errors errors;
    auto out = parse_server_config(root, errors);
    errors.throw_if_any();
    return out;
}

void check_default_executor_settings(const config_node& executor, const std::vector<std::string>& effective_types) {
    for (const auto& key : executor.keys()) {
        if (key == "type" || std::find(effective_types.begin(), effective_types.end(), key) != effective_types.end())
            continue;
        std::string msg = "settings for executor '" + key + "' but ";
        if (effective_types.empty()) {
            msg += "no executor is built from 'executor:' (every mount names one of 'executors:')";
        } else {
            msg += effective_types.size() == 1 ? "the effective executor is" : "the effective executors are";
            for (std::size_t i = 0; i < effective_types.size(); ++i)
                msg += (i ? ", '" : " '") + effective_types[i] + "'";
            msg += " (the frontend's default); set " + executor.path() + ".type: " + key + " to run on it";
        }
        executor.fail(key, msg);
    }
}

std::optional<std::string> normalize_mount_prefix(std::string_view text, std::string& why) {
    if (text.empty() || text.front() != '/') {
        why = "it must start with '/'";
        return std::nullopt;
    }
    for (char c : text) {
        if (c == '?' || c == '#') {
            why = "a prefix is a path, without '?' or '#'";
            return std::nullopt;
        }
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
            why = "it holds a space or a control character";
            return std::nullopt;
        }
    }
    if (text.find("//") != std::string_view::npos) {
        why = "it holds an empty segment ('//')";
        return std::nullopt;
    }
    std::string out(text);
    while (!out.empty() && out.back() == '/') out.pop_back();
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
