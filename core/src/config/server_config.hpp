#pragma once
// The core's own configuration sections (server, plugins, log, http and the
// `type` of frontend/executor) as validated plain data.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/config.hpp>
#include <m0/http_limits.hpp>
#include <m0/listen_socket.hpp>

#include "http2/settings.hpp"

#include "http/trusted_networks.hpp"

namespace m0 {

struct listen_address {
    std::string text;                        // as written, options included ("127.0.0.1:8000 proxy")
    boost::asio::ip::tcp::endpoint endpoint;
    bool proxy_protocol = false;             // "HOST:PORT proxy": connections start with a PROXY header
    bool tls = false;                        // "HOST:PORT tls": connections speak TLS (the `tls:` section)
    std::optional<bool> http2{};             // "h1": HTTP/1.1 only; "h2": HTTP/2 too; unset: http2.enabled
    // "unix:PATH [mode=0660] [owner=USER[:GROUP]]": a Unix socket (endpoint
    // unused: 0.0.0.0:0).
    std::optional<unix_socket_spec> unix;
};

// An executor of the deployment: one of `executors:`, or the `executor:`
// key, which is the executor named "default".
struct executor_config {
    std::string name;
    std::string type;  // plugin name, or "inline"
};

// One entry of `mounts:`. The frontend's own keys are its plugin's to read.
struct mount_config {
    std::size_t index = 0;      // position in `mounts:`
    std::string prefix;         // "" for "/", else "/api": starts with '/', no trailing '/'
    std::string frontend_type;  // mounts[i].frontend.type
    std::string executor;       // a name from `executors` (or "default"); empty: the frontend's default type
    std::optional<std::chrono::nanoseconds> request_timeout;  // mounts[i].request_timeout; unset: server.request_timeout
};

// server.request_timeout's default: an application may go two minutes
// without producing. Long enough for a view proxying a slow upstream's first
// token (an LLM gateway waits tens of seconds) and twice the proxy_read_timeout
// (60 s) that nginx gives the server behind it; short enough that a hung view
// frees its thread within minutes, not never.
inline constexpr std::chrono::seconds default_request_timeout{120};

struct server_config {
    std::vector<listen_address> listen;     // server.listen: list (or one string) of "host:port", "[v6]:port", "unix:PATH"; default ["127.0.0.1:8000"]; host must be an IP literal or "localhost"
    unsigned workers = 1;                   // server.workers: 1..256 serving processes (prefork when > 1)
    unsigned threads = 0;                   // server.threads: 1..256, default CPUs / server.workers (at least 1)
    std::string listener = "reuseport";     // server.listener: the older spelling of scheduler.listener (its plugin reads both)
    bool pin_cores = true;                  // server.pin_cores
    std::chrono::milliseconds drain_timeout{30000};  // server.drain_timeout
    std::chrono::nanoseconds request_timeout = default_request_timeout;  // server.request_timeout: 0 off (m0/deadline.hpp)
    unsigned max_written_off = 4;           // server.max_written_off: 1..64 written-off threads before the process is replaced
    http::trusted_networks forwarded_allow_ips;      // server.forwarded_allow_ips: CIDRs or "*"; default loopback
    std::uint64_t max_requests = 0;         // server.max_requests: a serving process is replaced after this many (0: never)
    std::uint64_t max_requests_jitter = 0;  // server.max_requests_jitter: each process adds random 0..jitter
    std::uint64_t max_rss = 0;              // server.max_rss: size; a serving process above it is replaced (0: never)
    std::string pid_file;                   // server.pid_file: path (relative to the config's dir); empty: none
    std::string scheduler_type = "reactors";  // scheduler.type: the scheduler plugin (its keys: its README)
    std::vector<std::string> plugin_paths;  // plugins.path: extra search dirs, relative to the config file's dir
    std::string frontend_type;              // frontend.type (required when a frontend section exists; default "http")
    std::string executor_type;              // executor.type; empty = the frontend's default
    std::vector<executor_config> executors; // executors.<name>.type, in file order, then "default" (executor.type) if set
    std::vector<mount_config> mounts;       // mounts: empty = the single `frontend:` at "/"
    http2::settings http2;                  // http2.* — every field of http2/settings.hpp, same names
    http_limits http;                       // http.* — every field of m0/http_limits.hpp, same names, durations/sizes via duration()/byte_size()
    std::string log_level = "info";         // log.level: debug|info|warning|error
    bool access_log = false;                // log.access: true, or a format string (then true)
    std::string access_log_format;          // the format string (gunicorn atoms); empty with json
    bool access_log_json = false;           // log.access_format: json (else text)
    std::string access_log_file;            // log.access_file: path (relative to the config's dir); empty: stderr
    std::optional<listen_address> metrics_listen;  // metrics.listen: HOST:PORT; absent: no metrics
    // Top-level sections the core does not own, in file order: each is a
    // module plugin's (m0-module-<name>.so), or one that other plugins read
    // (`python`); the deployment refuses it if nothing reads it.
    std::vector<std::string> module_sections;
    // False when frontend/executor/executors/mounts had an error: then the
    // frontends and executors above are only those read before it.
    bool frontend_group_valid = true;
};

// Top-level sections the core reads. Any other belongs to a plugin; a section
// nothing reads is refused after every plugin was built
// (config_document::unread_sections).
inline const std::vector<std::string> core_sections = {"server",    "plugins", "frontend", "executor",
                                                       "executors", "mounts",  "http",     "log",
                                                       "metrics",   "scheduler", "tls", "http2"};

// Validates the core's own sections; other top-level keys are module sections.
// `frontend` and `executor` hold plugin keys too: only `type` is read here
// (plugins validate the rest). In `executor`, besides `type`, only a subsection
// named after the chosen executor is allowed (executor.pool.* when type is pool;
// without a type, see check_default_executor_settings);
// the same holds for each entry of `executors`. `mounts` and `frontend` are
// exclusive; a mount names an executor that exists, and every executor is
// used by some mount (or, without mounts, `executor:` by the frontend).
// Throws one config_error with every error found.
M0_API server_config parse_server_config(const config_node& root);
// The same, adding the errors to `errors` instead: what it returns holds what
// could be read (defaults where a section had an error), so that the plugins
// can still check their sections in the same run.
M0_API server_config parse_server_config(const config_node& root, config_errors& errors);

// `executor:` without a `type` takes its type from the frontend (each
// mount's unnamed executor from its frontend): a subsection of it must be
// named after one of those effective types (`executor.pool.threads` under
// WSGI), which only the frontends know. Call with the types of the
// executors built from `executor:`; fails at the first subsection that
// matches none.
M0_API void check_default_executor_settings(const config_node& executor,
                                            const std::vector<std::string>& effective_types);

// A mount prefix as written ("/api/", "/") → its canonical form ("/api", "");
// nullopt (with `why` set) when it is not a path prefix.
M0_API std::optional<std::string> normalize_mount_prefix(std::string_view text, std::string& why);

// The networks whose forwarding headers are believed when
// server.forwarded_allow_ips is not set: loopback.
// Loopback and Unix sockets ("unix:"): peers on this machine, as nginx in front of m0 is.
inline const std::vector<std::string> default_forwarded_allow_ips = {"127.0.0.0/8", "::1", "unix:"};

// "127.0.0.1:8000", "[::1]:9000", "localhost:80" -> endpoint; throws config_error via `at`.
M0_API boost::asio::ip::tcp::endpoint parse_listen_address(const std::string& text, const config_node& at);

}  // namespace m0
