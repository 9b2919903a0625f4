#include "server/prefork.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include <m0/log.hpp>
#include <m0/version.hpp>

#include "server/listen_sockets.hpp"
#include "server/load_table.hpp"
#include "server/pid_file.hpp"
#include "server/reload.hpp"
#include "server/sd_notify.hpp"
#include "server/serve_process.hpp"
#include "server/supervisor.hpp"

namespace m0 {
namespace {

// --reload's watch: the directories the apps are imported from (each
// frontend's chdir, or the current directory) unless --reload-dir says,
// and the config file.
reload_watch_options reload_watch_for(const deployment& d, const run_options& options) {
    namespace fs = std::filesystem;
    reload_watch_options w = options.reload_watch;
    if (w.dirs.empty()) {
        const config_node root = d.doc.root();
        std::vector<config_node> frontends = {root.child("frontend")};
        if (root.child("mounts").is_sequence())
            for (const auto& m : root.child("mounts").items()) frontends.push_back(m.child("frontend"));
        for (const auto& f : frontends) {
            if (!f.is_map() || !f.has("chdir")) continue;
            const auto dir = f.child("chdir").as_string();
            const std::string base = f.base_dir();
            w.dirs.push_back(fs::path(dir).is_absolute() || base.empty() ? dir : (fs::path(base) / dir).string());
        }
        if (w.dirs.empty()) w.dirs.push_back(fs::current_path().string());
    }
    for (const auto& dir : w.dirs) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) log::warning("reload: " + dir + " is not a directory: nothing in it is watched");
    }
    if (!options.config_file.empty()) w.files.push_back(options.config_file);
    return w;
}

}  // namespace

int run_prefork(deployment& d, const run_options& options, std::vector<inherited_socket> inherited,
                std::vector<pid_t> previous) {
    // fork() copies only the calling thread: a thread started while the
    // deployment was built would be missing, with whatever locks it held.
    if (unsigned threads = process_thread_count(); threads > 1) {
        std::cerr << "m0: cannot start " << d.cfg.workers << " worker processes: " << threads - 1
                  << " thread(s) already run in this process (started by a plugin or by the imported application),"
                     " and fork() would not copy them"
                  << (options.reload ? " (--reload serves from a forked process even with one: start those threads "
                                       "on the first request, or serve without --reload)"
                                     : "")
                  << "\n";
        if (!previous.empty()) return keep_previous_workers(std::move(previous));
        return 1;
    }
    // Before any socket opens, so the watcher holds none.
    int reload_fd = -1;
    if (options.reload) {
        const reload_watch_options watch = reload_watch_for(d, options);
        reload_fd = start_reload_watcher(watch);
        if (reload_fd < 0) {
            std::cerr << "m0: cannot start: --reload: cannot start the file watcher\n";
            return 1;
        }
        // Once, not again at each reload (the re-exec'd m0 has `previous`).
        if (previous.empty())
            log::info("reload: watching " + describe_reload_watch(watch) +
                      "; reload mode is for development: each change restarts the worker processes");
    }
    std::vector<boost::asio::ip::tcp::endpoint> addresses;
    for (const auto& l : d.cfg.listen) addresses.push_back(l.endpoint);
    const socket_layout layout = d.sockets();
    std::unique_ptr<listen_sockets> sockets;
    std::unique_ptr<pid_file> pid;
    std::unique_ptr<load_table> load;
    try {
        sockets = std::make_unique<listen_sockets>(addresses, layout, d.cfg.workers, scheduler_options{}.backlog,
                                                   std::move(inherited), unix_listeners(d.cfg));
        load = std::make_unique<load_table>(d.cfg.workers, d.cfg.threads);
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
             << d.cfg.threads << " thread(s) each (scheduler " << d.scheduler->name() << "), "
             << describe_frontends(d) << ", "
             << to_string(socket_layout{sockets->strategy(), layout.reuseport_sockets}) << ", listening on"
             << describe_listening(d.cfg, addresses);
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
        // The watcher exits once the supervisor's end closes: none here.
        if (reload_fd >= 0) ::close(reload_fd);
        d.composed->after_fork_child();
    };
    hooks.open_slot = [&](unsigned slot) { sockets->open_slot(slot); };
    hooks.close_slot = [&](unsigned slot) { sockets->close_slot(slot); };
    hooks.start_check = [&] {
        return start_check(exe, options, socket_layout{sockets->strategy(), layout.reuseport_sockets});
    };
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
    process_role role{true, r.index, r.count, r.metrics_slot, sockets.get(), load->for_process(r.index)};
    return serve(d, role);
}

}  // namespace m0
