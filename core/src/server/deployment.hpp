#pragma once
// How a deployment is built: the config read and checked, every plugin
// (modules, frontends, executors, the scheduler) loaded and built, and the
// access log and metrics set up — all before anything serves or forks.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <m0/config.hpp>
#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/module.hpp>
#include <m0/scheduler.hpp>
#include <m0/services.hpp>
#include <m0/tls/server_context.hpp>
#include <m0/tls/settings.hpp>

#include "config/server_config.hpp"
#include "plugin/plugin_loader.hpp"
#include "server/composed_frontend.hpp"
#include "server/server_runner.hpp"
#include "telemetry/access_log_format.hpp"
#include "telemetry/metrics_server.hpp"
#include "telemetry/metrics_table.hpp"

namespace m0 {

// How to build one executor of the deployment, kept so that each serving
// process under server.workers builds its own.
struct executor_spec {
    std::string name;     // from `executors:` or "default"; empty: a mount's unnamed executor
    std::string type;
    config_node section;  // the plugin's section: <executor>.<type>
    config_node owner;    // the section holding `type` (for errors)
};

// A frontend of the deployment: the single `frontend:` at "/", or a mount.
struct mounted_frontend {
    std::string prefix;  // canonical: "" for "/"
    std::string type;
    std::unique_ptr<frontend> fe;
    std::size_t executor = 0;  // index into deployment::executor_specs / executors
    std::chrono::nanoseconds request_timeout{0};  // this mount's, or server.request_timeout; 0: off
};

// The pieces of one deployment, built and validated before anything starts.
struct deployment {
    config_document doc;
    server_config cfg;
    std::unique_ptr<plugin_loader> loader;
    // Before the plugins that register in it, so it is destroyed after them.
    std::unique_ptr<service_registry> services;
    std::vector<std::unique_ptr<module>> modules;
    std::vector<mounted_frontend> frontends;
    std::unique_ptr<composed_frontend> composed;
    std::vector<executor_spec> executor_specs;
    std::vector<std::unique_ptr<executor>> executors;  // one per spec
    std::unique_ptr<m0::scheduler> scheduler;           // scheduler.type
    // Access log and metrics (log.access, metrics.listen), set up by setup_telemetry.
    std::optional<telemetry::access_log_format> access_format;
    std::unique_ptr<telemetry::metrics_table> metrics;
    std::unique_ptr<telemetry::metrics_server> metrics_server;
    // The `tls:` section and the contexts built (and every file checked)
    // from it; both empty without one.
    std::optional<tls::settings> tls_settings;
    std::shared_ptr<const tls::server_context> tls;

    // The listening sockets of one serving process, as the scheduler lays them out.
    socket_layout sockets() const { return scheduler->sockets(cfg.threads); }
};

// The config file with the --set overrides applied.
config_document load_document(const run_options& options);
std::vector<std::string> search_dirs_for(const server_config& cfg);

// Builds and checks everything before anything starts. Every error is
// reported in one run (one config_error): the core's sections, then each
// plugin's section even when the core's had errors, in YAML order.
deployment build_deployment(const run_options& options);

// The access log's format, the metrics table (mapped before any fork, so
// the serving processes share it) and the metrics listener (bound now, so a
// busy address stops m0 before anything forks; its thread starts later).
void setup_telemetry(deployment& d);

// Each serving process builds its own executors (prefork).
void make_executors(deployment& d);
std::vector<executor*> executor_pointers(const deployment& d);
// Stops every executor, waiting a short grace for each; returns the threads
// left inside application code.
unsigned stop_executors(deployment& d);

// server.listen's Unix sockets, per address (nullopt: a TCP one), for listen_sockets.
std::vector<std::optional<unix_socket_spec>> unix_listeners(const server_config& cfg);
bool has_unix_listener(const server_config& cfg);
// For the start-up lines: the addresses bound, a Unix socket as "unix:PATH".
std::string describe_listening(const server_config& cfg, const std::vector<boost::asio::ip::tcp::endpoint>& bound);

// For the start-up lines: "frontend http" or "mounts /static=http /app=wsgi";
// "executor pool" or "executors app=pool /static=inline".
std::string describe_frontends(const deployment& d);
std::string describe_executors(const deployment& d);

}  // namespace m0
