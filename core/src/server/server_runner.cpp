#include "server/server_runner.hpp"

#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <memory>

#include <m0/plugin.hpp>

#include "server/connection_report.hpp"
#include "server/deployment.hpp"
#include "server/listen_sockets.hpp"
#include "server/prefork.hpp"
#include "server/reload.hpp"
#include "server/serve_process.hpp"
#include "server/socket_activation.hpp"
#include "server/supervisor.hpp"

namespace m0 {

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
        // A reload's check: the new config must keep the supervisor's sockets.
        if (d.cfg.workers > 1) {
            if (const auto why = reload_layout_error(d.sockets(), d.scheduler->name()); !why.empty()) {
                std::cerr << "m0: " << why << "\n";
                return 2;
            }
        }
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
        // As YAML comments, so the output still parses: what overrides the
        // file's keys and the defaults, flag over environment over YAML.
        if (!options.origins.empty()) {
            std::cout << "# set by the command line and the environment (a flag over its M0_ variable over the YAML):\n";
            for (const auto& o : options.origins) std::cout << "#   " << o << "\n";
        }
        std::cout << d.doc.effective_yaml();
        if (d.doc.effective_yaml().empty() || d.doc.effective_yaml().back() != '\n') std::cout << "\n";
        print_connection_report(d, std::cerr);
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
    if (d.cfg.workers > 1 || !previous.empty() || options.reload) return run_prefork(d, options, std::move(inherited), std::move(previous));
    std::unique_ptr<listen_sockets> sockets;
    if (!inherited.empty() || has_unix_listener(d.cfg)) {
        // Socket activation: serve on what systemd passed, bind nothing.
        // Unix sockets: opened (and removed at exit) by the core, which
        // hands the scheduler shared listeners.
        std::vector<boost::asio::ip::tcp::endpoint> addresses;
        for (const auto& l : d.cfg.listen) addresses.push_back(l.endpoint);
        try {
            sockets = std::make_unique<listen_sockets>(addresses, socket_layout{listener_strategy::shared, 1}, 1,
                                                       scheduler_options{}.backlog, std::move(inherited),
                                                       unix_listeners(d.cfg));
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
