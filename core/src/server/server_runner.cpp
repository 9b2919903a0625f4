#include "server/server_runner.hpp"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <m0/config.hpp>
#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/log.hpp>
#include <m0/plugin.hpp>

#include "config/server_config.hpp"
#include "plugin/plugin_loader.hpp"
#include "scheduler/scheduler.hpp"

namespace m0 {
namespace {

// SIGINT is the interactive stop: the same drain, but a user at a terminal
// does not want to wait the full production drain timeout.
constexpr std::chrono::milliseconds interactive_drain_timeout{5000};

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

// The pieces of one deployment, built and validated before anything starts.
struct deployment {
    config_document doc;
    server_config cfg;
    std::unique_ptr<plugin_loader> loader;
    std::unique_ptr<frontend> fe;
    std::unique_ptr<executor> ex;
};

deployment build_deployment(const run_options& options) {
    deployment d{load_document(options), {}, nullptr, nullptr, nullptr};
    config_node root = d.doc.root();
    d.cfg = parse_server_config(root);
    log::set_level(parse_level(d.cfg.log_level));
    d.loader = std::make_unique<plugin_loader>(search_dirs_for(d.cfg));

    config_node frontend_section = root.child("frontend");
    plugin_context fctx{&frontend_section, &root, d.cfg.threads};
    const auto& fp = d.loader->load(plugin_kind::frontend, d.cfg.frontend_type);
    d.fe = fp.descriptor->make_frontend(fctx);
    if (!d.fe) throw std::runtime_error("frontend plugin '" + d.cfg.frontend_type + "' returned no frontend");

    std::string executor_type = d.cfg.executor_type.empty() ? d.fe->default_executor() : d.cfg.executor_type;
    // Records the frontend's default as effective, so --check shows which executor runs.
    (void)root.child("executor").string("type", executor_type);
    if (executor_type == "inline") {
        d.ex = make_inline_executor();
    } else {
        config_node executor_section = root.child("executor").child(executor_type);
        plugin_context ectx{&executor_section, &root, d.cfg.threads};
        const auto& ep = d.loader->load(plugin_kind::executor, executor_type);
        d.ex = ep.descriptor->make_executor(ectx);
        if (!d.ex) throw std::runtime_error("executor plugin '" + executor_type + "' returned no executor");
    }
    return d;
}

void print_reports(const std::vector<worker_report>& reports) {
    for (const auto& r : reports) {
        std::ostringstream line;
        line << "worker " << r.index << ": accepted " << r.accepted << ", requests " << r.requests
             << ", open at drain " << r.connections_at_drain << ", drained " << r.drained << ", force-closed "
             << r.force_closed << ", in flight at deadline " << r.in_flight_at_deadline;
        if (r.timed_out) line << ", timed out";
        if (r.crashed) line << ", CRASHED: " << r.error;
        if (r.detached) line << ", detached (did not stop)";
        log::info(line.str());
    }
}

}  // namespace

int run_server(const run_options& options) {
    // Signals are taken synchronously by this thread only: block them before
    // any other thread exists so every thread inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    deployment d;
    try {
        d = build_deployment(options);
    } catch (const std::exception& e) {
        std::cerr << "m0: " << e.what() << "\n";
        return 2;
    }
    if (options.check_only) {
        std::cout << d.doc.effective_yaml();
        if (d.doc.effective_yaml().empty() || d.doc.effective_yaml().back() != '\n') std::cout << "\n";
        std::cerr << "m0: configuration OK\n";
        return 0;
    }

    scheduler_options so;
    so.workers = d.cfg.threads;
    so.listener = d.cfg.listener == "shared" ? listener_strategy::shared : listener_strategy::reuseport;
    so.pin_cores = d.cfg.pin_cores;
    for (const auto& l : d.cfg.listen) so.addresses.push_back(l.endpoint);
    so.limits = d.cfg.http;

    std::unique_ptr<scheduler> sched;
    try {
        d.fe->prepare(*d.ex);
        d.ex->start();
        sched = std::make_unique<scheduler>(*d.fe, *d.ex, so);
        sched->start();
    } catch (const std::exception& e) {
        std::cerr << "m0: cannot start: " << e.what() << "\n";
        sched.reset();
        d.ex->stop();
        return 1;
    }
    {
        std::ostringstream line;
        line << "m0 " << M0_VERSION_STRING << " serving with " << so.workers << " worker(s), frontend "
             << d.cfg.frontend_type << ", executor " << d.ex->name() << ", listening on";
        for (const auto& ep : sched->local_endpoints()) line << " " << ep;
        log::info(line.str());
    }

    int first = 0;
    while (first == 0) {
        int sig = 0;
        if (sigwait(&stop_signals, &sig) == 0) first = sig;
    }
    auto timeout = first == SIGINT ? std::min(interactive_drain_timeout, d.cfg.drain_timeout) : d.cfg.drain_timeout;
    log::info(std::string("received ") + (first == SIGINT ? "SIGINT" : "SIGTERM") + ", draining (timeout " +
              std::to_string(timeout.count()) + " ms); send it again to stop at once");

    // Drain on a helper thread so this thread keeps listening: a second
    // signal turns the drain into a hard stop.
    std::atomic<bool> drained{false};
    std::vector<worker_report> reports;
    std::thread drainer([&] {
        reports = sched->drain(timeout);
        drained.store(true, std::memory_order_release);
    });
    bool hard = false;
    while (!drained.load(std::memory_order_acquire)) {
        timespec tick{0, 50'000'000};
        int sig = sigtimedwait(&stop_signals, nullptr, &tick);
        if (sig > 0 && !hard) {
            hard = true;
            log::warning("second signal: stopping now");
            // drain() is waiting for the workers; raise its phase to a hard stop.
            sched->shutdown();
        }
    }
    drainer.join();
    print_reports(reports);
    unsigned crashed = sched->crashed_worker_count();
    sched.reset();
    d.ex->stop();
    if (crashed) log::warning(std::to_string(crashed) + " worker(s) crashed while serving");
    log::info("stopped");
    return 0;
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
    if (found.empty()) std::cout << "no plugins found\n";
    for (const auto& p : found) {
        if (p.descriptor) {
            std::cout << p.descriptor->name << "\t" << to_string(p.descriptor->kind) << "\tabi "
                      << p.descriptor->abi_major << "." << p.descriptor->abi_minor << "\t"
                      << p.descriptor->build_signature << "\t" << p.path << "\n";
        } else {
            std::cout << "REFUSED\t" << p.path << "\t" << p.error << "\n";
        }
    }
    return 0;
}

}  // namespace m0
