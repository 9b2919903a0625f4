#include "server/server_runner.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <m0/config.hpp>
#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/log.hpp>
#include <m0/module.hpp>
#include <m0/plugin.hpp>
#include <m0/services.hpp>

#include "config/server_config.hpp"
#include "http/client_policy.hpp"
#include "plugin/plugin_choice.hpp"
#include "plugin/plugin_loader.hpp"
#include "scheduler/scheduler.hpp"
#include "server/composed_frontend.hpp"
#include "server/listen_sockets.hpp"
#include "server/pid_file.hpp"
#include "server/sd_notify.hpp"
#include "server/socket_activation.hpp"
#include "server/supervisor.hpp"
#include "telemetry/access_log_format.hpp"
#include "telemetry/access_log_sink.hpp"
#include "telemetry/metrics_sampler.hpp"
#include "telemetry/metrics_server.hpp"
#include "telemetry/metrics_table.hpp"
#include "telemetry/request_recorder.hpp"

namespace m0 {
namespace {

// SIGINT is the interactive stop: the same drain, but a user at a terminal
// does not want to wait the full production drain timeout.
constexpr std::chrono::milliseconds interactive_drain_timeout{5000};
// After the drain, how long executor threads still inside application code
// get to return before the process exits without them.
constexpr std::chrono::milliseconds executor_stop_grace{500};

log::level parse_level(const std::string& s) {
    if (s == "debug") return log::level::debug;
    if (s == "warning") return log::level::warning;
    if (s == "error") return log::level::error;
    return log::level::info;
}

config_document load_document(const run_options& options) {
    auto doc = options.config_file.empty() ? config_document::from_string("", "<defaults>")
                                           : config_document::load(options.config_file);
    for (const auto& s : options.sets) doc.set(s);
    return doc;
}

std::vector<std::string> search_dirs_for(const server_config& cfg) {
    return plugin_loader::default_search_dirs(cfg.plugin_paths);
}

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
    // Access log and metrics (log.access, metrics.listen), set up by setup_telemetry.
    std::optional<telemetry::access_log_format> access_format;
    std::unique_ptr<telemetry::metrics_table> metrics;
    std::unique_ptr<telemetry::metrics_server> metrics_server;
};

plugin_context context_for(deployment& d, const config_node& section, const config_node& root) {
    plugin_context ctx;
    ctx.section = &section;
    ctx.root = &root;
    ctx.reactor_count = std::max(1u, d.cfg.threads);  // 0 only when server.threads had an error
    ctx.process_count = d.cfg.workers;
    ctx.services = d.services.get();
    return ctx;
}

std::unique_ptr<executor> make_executor(deployment& d, const executor_spec& spec) {
    if (spec.type == "inline") return make_inline_executor();
    config_node root = d.doc.root();
    plugin_context ectx = context_for(d, spec.section, root);
    const auto& ep = load_chosen_plugin(*d.loader, plugin_kind::executor, spec.type, spec.owner, "type", {"inline"});
    auto ex = ep.descriptor->make_executor(ectx);
    if (!ex) throw std::runtime_error("executor plugin '" + spec.type + "' returned no executor");
    return ex;
}

void make_executors(deployment& d) {
    d.executors.clear();
    for (const auto& spec : d.executor_specs) d.executors.push_back(make_executor(d, spec));
}

std::vector<executor*> executor_pointers(const deployment& d) {
    std::vector<executor*> out;
    for (const auto& ex : d.executors) out.push_back(ex.get());
    return out;
}

std::unique_ptr<frontend> make_frontend(deployment& d, const std::string& type, const config_node& section,
                                        const config_node& root) {
    plugin_context fctx = context_for(d, section, root);
    const auto& fp = load_chosen_plugin(*d.loader, plugin_kind::frontend, type, section, "type");
    auto fe = fp.descriptor->make_frontend(fctx);
    if (!fe) throw std::runtime_error("frontend plugin '" + type + "' returned no frontend");
    return fe;
}

// Runs one step of building the deployment, keeping its error so that the
// steps after it still run: a plugin refused or failing to build (its
// factory threw) is reported with the others, and only its section goes
// unchecked. Returns false on an error.
template <class Step>
bool collect(config_errors& errors, Step&& step) {
    try {
        return errors.check(step);
    } catch (const std::exception& e) {
        errors.add(config_error(e.what()));
        return false;
    }
}

// The executors `executors:` and `executor:` declare, then the frontends,
// each on the executor it names or on an unnamed one of its default type
// (settings from `executor.<type>` if present, as without mounts). A
// frontend that fails to build is left out (its error kept in `errors`),
// and so is its unnamed executor, whose type it would have said. Returns
// whether every frontend was built.
bool build_frontends(deployment& d, const config_node& root, config_errors& errors) {
    for (const auto& e : d.cfg.executors) {
        const config_node owner = e.name == "default" ? root.child("executor") : root.child("executors").child(e.name);
        d.executor_specs.push_back({e.name, e.type, owner.child(e.type), owner});
    }
    auto executor_for = [&](const std::string& name, const frontend& fe) -> std::size_t {
        for (std::size_t i = 0; i < d.executor_specs.size(); ++i)
            if (!name.empty() && d.executor_specs[i].name == name) return i;
        const std::string type = fe.default_executor();
        d.executor_specs.push_back({"", type, root.child("executor").child(type), root.child("executor")});
        return d.executor_specs.size() - 1;
    };
    if (d.cfg.mounts.empty()) {
        // Empty when the core's checks of `frontend:` or `mounts:` failed.
        if (d.cfg.frontend_type.empty()) return false;
        std::unique_ptr<frontend> fe;
        if (!collect(errors, [&] { fe = make_frontend(d, d.cfg.frontend_type, root.child("frontend"), root); }))
            return false;
        // Records the frontend's default as effective, so --check shows which executor runs.
        if (d.cfg.executor_type.empty()) (void)root.child("executor").string("type", fe->default_executor());
        const std::size_t ex = executor_for(d.cfg.executor_type.empty() ? "" : "default", *fe);
        d.frontends.push_back({"", d.cfg.frontend_type, std::move(fe), ex});
        return true;
    }
    const auto items = root.child("mounts").items();
    bool all = true;
    for (const auto& m : d.cfg.mounts) {
        std::unique_ptr<frontend> fe;
        if (!collect(errors, [&] { fe = make_frontend(d, m.frontend_type, items[m.index].child("frontend"), root); })) {
            all = false;
            continue;
        }
        const std::size_t ex = executor_for(m.executor, *fe);
        d.frontends.push_back({m.prefix, m.frontend_type, std::move(fe), ex});
    }
    return all;
}

// An executor's name as logs and metrics give it: from `executors:`,
// "default", or for a mount's unnamed executor its mount's prefix.
std::string executor_name(const deployment& d, std::size_t index) {
    std::string name = d.executor_specs[index].name;
    for (const auto& f : d.frontends)
        if (name.empty() && f.executor == index) name = f.prefix.empty() ? "/" : f.prefix;
    return name;
}

// "executor pool" or "executors app=pool /static=inline", for the start-up
// line.
std::string describe_executors(const deployment& d) {
    if (d.executors.size() == 1) return "executor " + std::string(d.executors.front()->name());
    std::string out = "executors";
    for (std::size_t i = 0; i < d.executors.size(); ++i)
        out.append(" ").append(executor_name(d, i)).append("=").append(d.executors[i]->name());
    return out;
}

// Stops every executor, waiting executor_stop_grace for each; returns the
// threads left inside application code.
unsigned stop_executors(deployment& d) {
    unsigned stuck = 0;
    for (auto& ex : d.executors) stuck += ex->stop(executor_stop_grace);
    return stuck;
}

// "frontend http" or "mounts /static=http /app=wsgi", for the start-up line.
std::string describe_frontends(const deployment& d) {
    if (d.cfg.mounts.empty()) return "frontend " + d.cfg.frontend_type;
    std::string out = "mounts";
    for (const auto& f : d.frontends) out += " " + (f.prefix.empty() ? std::string("/") : f.prefix) + "=" + f.type;
    return out;
}

// A top-level section the core does not own is a module plugin's when one of
// that name is found: the module is built. Otherwise it is left to the other
// plugins (`python` is read by those that embed CPython) and refused once
// every plugin was built if none read it (null here). A likely typo of a core
// section is refused at once.
std::unique_ptr<module> make_module(deployment& d, const std::string& name, const config_node& root) {
    const config_node section = root.child(name);
    const loaded_plugin* plugin = nullptr;
    try {
        plugin = &d.loader->load(plugin_kind::module, name);
    } catch (const plugin_error& e) {
        const std::string why = e.what();
        if (why.rfind("no module plugin", 0) != 0 && why.rfind("invalid module plugin name", 0) != 0) throw;
        if (auto near = nearest_key(name, core_sections))
            section.fail("", "unknown section '" + name + "' (did you mean '" + *near + "'?)");
        return nullptr;
    }
    plugin_context ctx = context_for(d, section, root);
    auto m = plugin->descriptor->make_module(ctx);
    if (!m) throw std::runtime_error("module plugin '" + name + "' returned no module");
    return m;
}

// After every plugin validated its section: what no getter read is read by
// nothing, a section a plugin of another deployment would read, or a typo.
void refuse_unread_sections(const deployment& d, const config_node& root, config_errors& errors) {
    for (const auto& name : d.doc.unread_sections()) {
        errors.check([&] {
            if (std::find(core_sections.begin(), core_sections.end(), name) != core_sections.end())
                root.child(name).fail("", "section '" + name + "' is read by nothing in this deployment");
            root.child(name).fail("", "unknown section '" + name + "': neither a core section nor a module plugin (m0-module-" +
                                          name + ".so) found in the plugin path, and no plugin of this deployment reads it");
        });
    }
}

// Builds and checks everything before anything starts. Every error is
// reported in one run: the core's sections, then each plugin's section even
// when the core's had errors (a plugin that cannot be found or built is
// reported and its section skipped), in YAML order.
deployment build_deployment(const run_options& options) {
    deployment d{load_document(options), {}, nullptr, std::make_unique<service_registry>(), {}, {}, nullptr, {}, {}, std::nullopt, nullptr, nullptr};
    config_node root = d.doc.root();
    config_errors errors;
    d.cfg = parse_server_config(root, errors);
    log::set_level(parse_level(d.cfg.log_level));
    d.loader = std::make_unique<plugin_loader>(search_dirs_for(d.cfg));

    // Modules first: they provide services the frontends may look up.
    bool all_built = d.cfg.frontend_group_valid;
    for (const auto& name : d.cfg.module_sections)
        all_built &= collect(errors, [&] {
            if (auto m = make_module(d, name, root)) d.modules.push_back(std::move(m));
        });
    all_built &= build_frontends(d, root, errors);
    if (all_built && d.cfg.executor_type.empty()) {
        std::vector<std::string> types;  // of the executors `executor:` configures: the unnamed ones
        for (const auto& spec : d.executor_specs)
            if (spec.name.empty()) types.push_back(spec.type);
        all_built &= collect(errors, [&] { check_default_executor_settings(root.child("executor"), types); });
    }
    for (const auto& spec : d.executor_specs)
        all_built &= collect(errors, [&] { d.executors.push_back(make_executor(d, spec)); });

    // A plugin that was not built (or stopped at an error) did not read all
    // of what it reads: its sections would look unread.
    if (all_built) refuse_unread_sections(d, root, errors);
    errors.throw_if_any();

    std::vector<module*> modules;
    for (auto& m : d.modules) modules.push_back(m.get());
    std::vector<mount_part> mounts;
    for (auto& f : d.frontends) mounts.push_back({f.prefix, f.type, f.fe.get(), f.executor});
    d.composed = std::make_unique<composed_frontend>(std::move(mounts), std::move(modules), d.cfg.threads);
    return d;
}

// The access log's format, the metrics table (mapped before any fork, so the
// serving processes share it) and the metrics listener (bound now, so a busy
// address stops m0 before anything forks; its thread starts later).
void setup_telemetry(deployment& d) {
    if (d.cfg.access_log) {
        d.access_format = d.cfg.access_log_json ? telemetry::access_log_format::json()
                                                : telemetry::access_log_format::text(d.cfg.access_log_format);
        if (!d.cfg.access_log_file.empty()) {
            // Each serving process opens it for itself; say once if it cannot.
            const int fd = ::open(d.cfg.access_log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0)
                throw std::runtime_error("cannot open access log '" + d.cfg.access_log_file +
                                         "': " + std::strerror(errno));
            ::close(fd);
        }
    }
    if (!d.cfg.metrics_listen) return;
    std::vector<telemetry::mount_label> mounts;
    for (const auto& f : d.frontends) mounts.push_back({f.prefix, f.type});
    // A supervisor's processes overlap those they replace (a reload doubles
    // them for a moment), and SIGTTIN adds some: room for those too.
    const unsigned spare = d.cfg.workers > 1 ? d.cfg.workers + 4 : 0;
    std::vector<telemetry::executor_label> executors;
    for (std::size_t i = 0; i < d.executor_specs.size(); ++i)
        executors.push_back({executor_name(d, i), d.executor_specs[i].type});
    d.metrics = std::make_unique<telemetry::metrics_table>(d.cfg.workers, d.cfg.threads, std::move(mounts),
                                                           std::move(executors), spare);
    d.metrics_server = std::make_unique<telemetry::metrics_server>(d.cfg.metrics_listen->endpoint, *d.metrics);
    std::ostringstream line;
    line << "metrics: /metrics and /status.json on http://" << d.cfg.metrics_listen->endpoint
         << " (live page: /status)";
    log::info(line.str());
}

void print_reports(const std::vector<worker_report>& reports) {
    for (const auto& r : reports) {
        std::ostringstream line;
        line << "reactor " << r.index << ": accepted " << r.accepted << ", requests " << r.requests
             << ", open at drain " << r.connections_at_drain << ", drained " << r.drained << ", force-closed "
             << r.force_closed << ", in flight at deadline " << r.in_flight_at_deadline;
        if (r.jobs_abandoned) line << ", jobs abandoned " << r.jobs_abandoned;
        if (r.timed_out) line << ", timed out";
        if (r.crashed) line << ", CRASHED: " << r.error;
        if (r.detached) line << ", detached (did not stop)";
        log::info(line.str());
    }
}

// What the serving process is: the only one, or one of a supervisor's.
struct process_role {
    bool supervised = false;
    unsigned index = 0;
    unsigned count = 1;
    unsigned metrics_slot = 0;  // its slot of the metrics table, if below the table's size
    // Sockets opened for it (by its supervisor, or passed by systemd); null:
    // the scheduler binds its own.
    listen_sockets* sockets = nullptr;
};

std::string signal_name(int sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// What a serving process does with the signals that are not "stop": every
// one is logged, none kills it.
void on_other_signal(int sig, const process_role& role, const std::function<void()>& reopen_logs) {
    if (sig == SIGUSR1) {
        reopen_logs();
    } else if (role.supervised) {
        log::info("received " + signal_name(sig) + ": ignored by a worker process; send it to the supervisor (pid " +
                  std::to_string(::getppid()) + ")");
    } else if (sig == SIGHUP || sig == SIGTTIN || sig == SIGTTOU) {
        log::info("received " + signal_name(sig) +
                  ": ignored; reloading and resizing need a supervisor (server.workers > 1)");
    } else {
        log::info("received " + signal_name(sig) + ": ignored");
    }
}

// server.max_requests for this process: the limit plus its own random
// jitter, so that processes started together are not replaced together.
std::uint64_t request_limit(const server_config& cfg) {
    if (cfg.max_requests == 0) return 0;
    std::uint64_t jitter = 0;
    if (cfg.max_requests_jitter > 0) {
        std::random_device seed;
        jitter = std::uniform_int_distribution<std::uint64_t>(0, cfg.max_requests_jitter)(seed);
    }
    return cfg.max_requests + jitter;
}

std::uint64_t requests_served(const scheduler& sched) {
    std::uint64_t n = 0;
    for (unsigned r = 0; r < sched.reactor_count(); ++r) n += sched.stats(r).requests.load(std::memory_order_relaxed);
    return n;
}

std::shared_ptr<const http::client_policy> make_client_policy(const server_config& cfg) {
    auto policy = std::make_shared<http::client_policy>();
    policy->forwarded_trusted = cfg.forwarded_allow_ips;
    for (const auto& l : cfg.listen) policy->proxy_protocol.push_back(l.proxy_protocol);
    return policy;
}

// Frontend + executor + scheduler until a stop signal, then drain and report.
// Expects SIGTERM and SIGINT (and, supervised, SIGQUIT) blocked.
int serve(deployment& d, const process_role& role) {
    // The stop signals, and the others taken with them so that none has its
    // default action (which kills for most): SIGUSR1 reopens the access log,
    // the rest are logged.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGTTIN, SIGTTOU}) sigaddset(&stop_signals, sig);
    if (role.supervised) sigaddset(&stop_signals, hard_stop_signal);
    auto is_stop = [&](int sig) {
        return sig == SIGTERM || sig == SIGINT || (role.supervised && sig == hard_stop_signal);
    };

    scheduler_options so;
    so.workers = d.cfg.threads;
    so.listener = d.cfg.listener == "shared" ? listener_strategy::shared : listener_strategy::reuseport;
    // Each process pins its reactors to its own block of cores.
    so.pin_cores = d.cfg.pin_cores;
    so.first_core = role.index * d.cfg.threads;
    for (const auto& l : d.cfg.listen) so.addresses.push_back(l.endpoint);
    so.clients = make_client_policy(d.cfg);
    so.limits = d.cfg.http;
    so.services = d.services.get();
    if (role.sockets) role.sockets->hand_to_scheduler(role.index, so);

    serving_context sc;
    sc.process_index = role.index;
    sc.process_count = role.count;
    sc.reactor_count = d.cfg.threads;
    sc.services = d.services.get();
    so.check_addresses = !role.supervised;

    // Declared before the scheduler: reactors hand it lines until they are gone.
    std::unique_ptr<telemetry::access_log_sink> access_sink;
    // Without a free slot (more processes than the table holds, after
    // SIGTTIN) this process serves uncounted.
    auto* metrics = d.metrics && role.metrics_slot < d.metrics->process_count() ? d.metrics.get() : nullptr;
    if (d.metrics && !metrics) log::warning("metrics: no free slot in the metrics table; this process is not counted");
    if (metrics) {
        metrics->process_started(role.metrics_slot, static_cast<int>(::getpid()));
        so.stats_slot = [metrics, &role](unsigned r) { return &metrics->slot(role.metrics_slot, r).stats; };
    }
    if (d.access_format || metrics) {
        so.make_recorder = [&d, metrics, &role, &access_sink](unsigned r, boost::asio::io_context& io) {
            auto* slot = metrics ? &metrics->slot(role.metrics_slot, r) : nullptr;
            return std::make_unique<request_recorder>(r, io, d.access_format ? &*d.access_format : nullptr,
                                                      access_sink.get(), metrics, slot);
        };
    }
    auto reopen_logs = [&] {
        if (access_sink)
            access_sink->reopen();
        else
            log::info("received SIGUSR1: no access log file to reopen");
    };

    std::unique_ptr<scheduler> sched;
    std::unique_ptr<telemetry::metrics_sampler> sampler;
    bool serving_started = false;
    try {
        if (d.access_format) access_sink = std::make_unique<telemetry::access_log_sink>(d.cfg.access_log_file);
        d.composed->prepare_all(executor_pointers(d));
        for (auto& ex : d.executors) ex->start();
        d.composed->start_serving(sc);
        serving_started = true;
        sched = std::make_unique<scheduler>(*d.composed, executor_pointers(d), so);
        sched->start();
        if (d.metrics) {
            std::vector<const executor*> executors;
            for (const auto& ex : d.executors) executors.push_back(ex.get());
            sampler = std::make_unique<telemetry::metrics_sampler>(*d.metrics, role.index, std::move(executors),
                                                                   *d.composed);
            sampler->start();
        }
    } catch (const std::exception& e) {
        std::cerr << "m0: cannot start: " << e.what() << "\n";
        sampler.reset();
        sched.reset();
        if (serving_started) d.composed->stop_serving(sc);
        stop_executors(d);
        return 1;
    }
    {
        std::ostringstream line;
        line << "m0 " << M0_VERSION_STRING << " serving with " << so.workers << " reactor thread(s), "
             << describe_frontends(d) << ", " << describe_executors(d) << ", listening on";
        for (const auto& ep : sched->local_endpoints()) line << " " << ep;
        if (role.supervised) line << " (worker process " << role.index << " of " << role.count << ")";
        log::info(line.str());
    }

    if (role.supervised) report_ready(role.index);
    std::unique_ptr<pid_file> pid;
    if (!role.supervised) {
        try {
            if (!d.cfg.pid_file.empty()) pid = std::make_unique<pid_file>(d.cfg.pid_file);
        } catch (const std::exception& e) {
            log::error(std::string("cannot start: ") + e.what());
            sched->drain(std::chrono::milliseconds::zero());
            sched.reset();
            d.composed->stop_serving(sc);
            stop_executors(d);
            return 1;
        }
        sd_notify("READY=1\nMAINPID=" + std::to_string(::getpid()));
    }

    // server.max_requests: counted every second; once past it, the process
    // asks its supervisor for a successor and serves on until told to drain.
    const std::uint64_t limit = role.supervised ? request_limit(d.cfg) : 0;
    bool asked = false;
    int first = 0;
    while (first == 0) {
        timespec tick{1, 0};
        siginfo_t info{};
        const int sig = limit ? sigtimedwait(&stop_signals, &info, &tick) : sigwaitinfo(&stop_signals, &info);
        if (sig > 0 && is_stop(sig)) {
            first = sig;
        } else if (sig > 0) {
            on_other_signal(sig, role, reopen_logs);
        } else if (limit && !asked && requests_served(*sched) >= limit) {
            asked = true;
            log::info("served " + std::to_string(requests_served(*sched)) + " requests (server.max_requests " +
                      std::to_string(d.cfg.max_requests) + ", this process's limit with its jitter " +
                      std::to_string(limit) + "): asking the supervisor for a replacement");
            ask_for_replacement();
        }
    }
    if (!role.supervised) sd_notify("STOPPING=1");
    // Ends the /status streams once every serving process drains.
    if (d.metrics) d.metrics->process_draining(role.index);
    std::chrono::milliseconds timeout = d.cfg.drain_timeout;
    if (first == SIGINT) timeout = std::min(interactive_drain_timeout, d.cfg.drain_timeout);
    if (first == hard_stop_signal && role.supervised) timeout = std::chrono::milliseconds::zero();
    if (timeout.count() > 0) {
        log::info("received " + signal_name(first) + ", draining (timeout " + std::to_string(timeout.count()) +
                  " ms); send it again to stop at once");
    } else {
        log::info("received " + signal_name(first) + ", stopping now");
    }

    // Drain on a helper thread so this thread keeps listening: a second
    // signal turns the drain into a hard stop.
    std::atomic<bool> drained{false};
    std::vector<worker_report> reports;
    std::thread drainer([&] {
        reports = sched->drain(timeout);
        drained.store(true, std::memory_order_release);
    });
    bool hard = timeout.count() <= 0;
    while (!drained.load(std::memory_order_acquire)) {
        timespec tick{0, 50'000'000};
        int sig = sigtimedwait(&stop_signals, nullptr, &tick);
        if (sig > 0 && !is_stop(sig)) {
            on_other_signal(sig, role, reopen_logs);
            continue;
        }
        // A supervised process may get a drain signal twice (from a
        // terminal's process group and from its supervisor): only the
        // supervisor's hard-stop signal means "now".
        if (sig <= 0 || hard || (role.supervised && sig != hard_stop_signal)) continue;
        hard = true;
        log::warning("second signal: stopping now");
        // drain() is waiting for the workers; raise its phase to a hard stop.
        sched->shutdown();
    }
    drainer.join();
    if (sampler) sampler->stop();  // a last sample, while executors and plugins still run
    print_reports(reports);
    unsigned crashed = sched->crashed_worker_count();
    sched.reset();
    access_sink.reset();  // writes the last lines
    if (metrics) metrics->process_ended(role.metrics_slot);
    d.composed->stop_serving(sc);
    unsigned stuck = stop_executors(d);
    for (const auto& r : reports) stuck += r.detached ? 1 : 0;
    if (crashed) log::warning(std::to_string(crashed) + " reactor thread(s) crashed while serving");
    if (stuck > 0) {
        // Application code that does not return (a view sleeping, a
        // generator waiting on nothing) must not keep the process alive
        // after its drain: its thread would also hold up interpreter and
        // plugin teardown, so exit without running any of it.
        log::warning("stopped, leaving " + std::to_string(stuck) + " thread(s) inside application code");
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        ::_exit(0);
    }
    log::info("stopped");
    return 0;
}

// The serving processes of the m0 that exec'd this one on SIGHUP
// (M0_PREVIOUS_WORKERS, set by reexec()); empty otherwise.
std::vector<pid_t> take_previous_workers() {
    std::vector<pid_t> out;
    if (const char* list = std::getenv("M0_PREVIOUS_WORKERS")) {
        std::istringstream in(list);
        for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
    }
    ::unsetenv("M0_PREVIOUS_WORKERS");
    return out;
}

std::vector<char*> exec_argv(std::vector<std::string>& args) {
    std::vector<char*> out;
    for (auto& a : args) out.push_back(a.data());
    out.push_back(nullptr);
    return out;
}

// m0 as it is on disk now (an upgraded binary too): the path this process
// was started from, read before anything could replace it.
std::string own_executable() {
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : path.string();
}

// SIGHUP, first step: `m0 <same arguments> --check` in a child, its
// effective config to /dev/null and its errors to m0's log.
pid_t start_check(const std::string& exe, const run_options& options) {
    std::vector<std::string> args = options.command_line;
    args.push_back("--check");
    // Built before the fork: the child calls nothing but system calls until
    // it execs, since another thread (metrics) may hold the allocator's lock.
    auto argv = exec_argv(args);
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
}

// SIGHUP, second step: this process becomes a new m0 (same pid, so its
// serving processes stay its children and the pid file stays true), which
// builds the deployment from the config and code as they are now, takes
// the listening sockets over (LISTEN_FDS), starts its own serving processes
// and drains `serving` once they are ready. The signal mask stays blocked
// across the exec, so no signal can kill it in between.
void reexec(const std::string& exe, const run_options& options, listen_sockets& sockets,
            const std::vector<pid_t>& serving) {
    if (exe.empty() || ::access(exe.c_str(), X_OK) != 0) return;
    std::string list;
    for (pid_t pid : serving) list += std::to_string(pid) + " ";
    ::setenv("M0_PREVIOUS_WORKERS", list.c_str(), 1);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    pass_sockets_to_exec(sockets.for_exec());
    std::vector<std::string> args = options.command_line;
    auto argv = exec_argv(args);
    ::execv(exe.c_str(), argv.data());
    ::unsetenv("M0_PREVIOUS_WORKERS");
}

// A reload whose new deployment failed to build although its check passed
// (the files changed again in between): the previous serving processes go
// on serving under this process until it is stopped.
int keep_previous_workers(std::vector<pid_t> previous) {
    log::error("supervisor: reload failed (see above); the " + std::to_string(previous.size()) +
               " previous worker process(es) keep serving; fix the deployment and restart m0");
    supervisor_options so;
    so.processes = 0;
    so.previous = std::move(previous);
    return supervise(so, fork_hooks{}).exit_code;
}

// server.workers > 1: this process becomes the supervisor of that many
// serving processes, forked from the deployment built and validated here
// (the application is imported once and shared copy-on-write). It holds the
// listening sockets; each process serves on them. Returns the supervisor's
// exit code, or, in a serving process, that process's.
int run_prefork(deployment& d, const run_options& options, std::vector<inherited_socket> inherited,
                std::vector<pid_t> previous) {
    // fork() copies only the calling thread: a thread started while the
    // deployment was built would be missing, with whatever locks it held.
    if (unsigned threads = process_thread_count(); threads > 1) {
        std::cerr << "m0: cannot start " << d.cfg.workers << " worker processes: " << threads - 1
                  << " thread(s) already run in this process (started by a plugin or by the imported application),"
                     " and fork() would not copy them\n";
        if (!previous.empty()) return keep_previous_workers(std::move(previous));
        return 1;
    }
    std::vector<boost::asio::ip::tcp::endpoint> addresses;
    for (const auto& l : d.cfg.listen) addresses.push_back(l.endpoint);
    const auto configured = d.cfg.listener == "shared" ? listener_strategy::shared : listener_strategy::reuseport;
    std::unique_ptr<listen_sockets> sockets;
    std::unique_ptr<pid_file> pid;
    try {
        sockets = std::make_unique<listen_sockets>(addresses, effective_listener_strategy(configured), d.cfg.workers,
                                                   d.cfg.threads,
                                                   scheduler_options{}.backlog, std::move(inherited));
        if (!d.cfg.pid_file.empty()) pid = std::make_unique<pid_file>(d.cfg.pid_file);
    } catch (const std::exception& e) {
        std::cerr << "m0: cannot start: " << e.what() << "\n";
        if (!previous.empty()) return keep_previous_workers(std::move(previous));
        return 1;
    }
    for (std::size_t i = 0; i < addresses.size(); ++i) d.cfg.listen[i].endpoint = addresses[i];

    {
        std::ostringstream line;
        line << "m0 " << M0_VERSION_STRING << " supervisor: " << d.cfg.workers << " worker processes of "
             << d.cfg.threads << " thread(s) each, " << describe_frontends(d) << ", "
             << (sockets->strategy() == listener_strategy::shared ? "one shared listener" : "reuseport listeners")
             << ", listening on";
        for (const auto& a : addresses) line << " " << a;
        if (!previous.empty()) line << " (reloaded; " << previous.size() << " previous worker process(es) serve until these do)";
        log::info(line.str());
    }

    // An executor may hold kernel objects from its construction (the pool's
    // wake eventfds): shared by the processes, one would steal another's
    // wakes. They were built to validate the config; each process builds its own.
    d.executors.clear();

    // After the thread check: the supervisor serves the metrics of all its
    // processes (they share the table); fork() leaves this thread behind.
    if (d.metrics_server) d.metrics_server->start();

    const std::string exe = own_executable();
    supervisor_options so;
    so.processes = d.cfg.workers;
    so.drain_timeout = d.cfg.drain_timeout;
    so.interactive_drain_timeout = interactive_drain_timeout;
    so.max_rss = d.cfg.max_rss;
    so.metrics_slots = d.metrics ? d.metrics->process_count() : 0;
    so.previous = std::move(previous);
    fork_hooks hooks;
    hooks.before_fork = [&] {
        d.composed->before_fork();
        if (d.metrics_server) d.metrics_server->pause_for_fork();
    };
    hooks.after_fork_parent = [&] {
        if (d.metrics_server) d.metrics_server->resume_after_fork();
        d.composed->after_fork_parent();
    };
    hooks.after_fork_child = [&](unsigned) {
        if (d.metrics_server) {
            d.metrics_server->resume_after_fork();
            d.metrics_server->forget_in_child();
            (void)d.metrics_server.release();  // its thread is the supervisor's
        }
        // Not this process's to remove.
        (void)pid.release();
        d.composed->after_fork_child();
    };
    hooks.open_slot = [&](unsigned slot) { sockets->open_slot(slot); };
    hooks.close_slot = [&](unsigned slot) { sockets->close_slot(slot); };
    hooks.start_check = [&] { return start_check(exe, options); };
    hooks.reexec = [&](const std::vector<pid_t>& serving) { reexec(exe, options, *sockets, serving); };
    hooks.notify = [](std::string_view state) { sd_notify(state); };
    const supervise_result r = supervise(so, hooks);
    if (!r.child) return r.exit_code;
    try {
        make_executors(d);
    } catch (const std::exception& e) {
        std::cerr << "m0: cannot start: " << e.what() << "\n";
        return 1;
    }
    process_role role{true, r.index, r.count, r.metrics_slot, sockets.get()};
    return serve(d, role);
}

}  // namespace

int run_server(const run_options& options) {
    // Signals are taken synchronously by one thread: block them before any
    // other thread exists so every thread inherits the mask. Each is handled
    // (docs: README.md, Signals); none keeps its default action, which would
    // kill m0 without a word for most of them.
    const sigset_t signals = supervisor_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    std::vector<pid_t> previous = take_previous_workers();
    std::vector<inherited_socket> inherited;
    try {
        inherited = take_inherited_sockets();
    } catch (const std::exception& e) {
        std::cerr << "m0: cannot start: " << e.what() << "\n";
        return 1;
    }
    deployment d;
    try {
        d = build_deployment(options);
    } catch (const std::exception& e) {
        std::cerr << "m0: " << e.what() << "\n";
        if (!previous.empty()) return keep_previous_workers(std::move(previous));
        return 2;
    }
    if (options.check_only) {
        // What run_prefork would refuse: the app (or a plugin) started
        // threads while the deployment was built, and fork() copies none.
        if (d.cfg.workers > 1) {
            if (const unsigned threads = process_thread_count(); threads > 1) {
                std::cerr << "m0: server.workers is " << d.cfg.workers << " but " << threads - 1
                          << " thread(s) already run after the application was imported (started at import "
                             "time by the application or by a plugin): fork() would not copy them; start them "
                             "later (on the first request, or in a post-fork hook), or use server.workers: 1\n";
                return 2;
            }
        }
        std::cout << d.doc.effective_yaml();
        if (d.doc.effective_yaml().empty() || d.doc.effective_yaml().back() != '\n') std::cout << "\n";
        std::cerr << "m0: configuration OK\n";
        return 0;
    }
    try {
        setup_telemetry(d);
    } catch (const std::exception& e) {
        std::cerr << "m0: cannot start: " << e.what() << "\n";
        if (!previous.empty()) return keep_previous_workers(std::move(previous));
        return 1;
    }
    if (d.cfg.workers > 1 || !previous.empty()) return run_prefork(d, options, std::move(inherited), std::move(previous));
    std::unique_ptr<listen_sockets> sockets;
    if (!inherited.empty()) {
        // Socket activation: serve on what systemd passed, bind nothing.
        std::vector<boost::asio::ip::tcp::endpoint> addresses;
        for (const auto& l : d.cfg.listen) addresses.push_back(l.endpoint);
        try {
            sockets = std::make_unique<listen_sockets>(addresses, listener_strategy::shared, 1, d.cfg.threads,
                                                       scheduler_options{}.backlog, std::move(inherited));
        } catch (const std::exception& e) {
            std::cerr << "m0: cannot start: " << e.what() << "\n";
            return 1;
        }
        for (std::size_t i = 0; i < addresses.size(); ++i) d.cfg.listen[i].endpoint = addresses[i];
    }
    if (d.metrics_server) d.metrics_server->start();
    process_role role;
    role.sockets = sockets.get();
    return serve(d, role);
}

int list_plugins(const run_options& options) {
    std::vector<std::string> dirs;
    try {
        auto doc = load_document(options);
        auto cfg = parse_server_config(doc.root());
        dirs = search_dirs_for(cfg);
    } catch (const std::exception& e) {
        std::cerr << "m0: " << e.what() << "\n";
        return 2;
    }
    plugin_loader loader(dirs);
    auto found = loader.list_all();
    std::cout << "search path:";
    for (const auto& d : loader.search_dirs()) std::cout << " " << d;
    std::cout << "\n";
    // The executor built into the core is chosen like a plugin (executor.type: inline).
    std::cout << "inline\texecutor\truns each job on the reactor thread that submitted it, no hand-off "
                 "(the baseline)\tbuilt into m0\n";
    if (found.empty()) std::cout << "no plugin files found\n";
    for (const auto& p : found) {
        if (p.descriptor) {
            std::cout << p.descriptor->name << "\t" << to_string(p.descriptor->kind) << "\t"
                      << (p.descriptor->description ? p.descriptor->description : "") << "\tabi "
                      << p.descriptor->abi_major << "." << p.descriptor->abi_minor << "\t"
                      << p.descriptor->build_signature << "\t" << p.path << "\n";
        } else {
            std::cout << "REFUSED\t" << p.path << "\t" << p.error << "\n";
        }
    }
    return 0;
}

}  // namespace m0
