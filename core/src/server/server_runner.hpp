#pragma once
// Composition of an m0 process: config → plugins → frontend + executor →
// scheduler → signals → drain → report; with server.workers > 1 the
// supervisor (server/supervisor.hpp) forks that many serving processes after
// the config, plugins and frontend were built. Kept out of main() so it is
// testable.
#include <string>
#include <vector>

#include <m0/api.hpp>

#include "server/reload_watch.hpp"

namespace m0 {

struct run_options {
    std::string config_file;          // empty: defaults only
    std::vector<std::string> sets;    // "key.path=value", applied in order
    bool check_only = false;          // validate, print the effective config, exit
    // Where the command line and the environment set something ("server.workers=4    <- M0_WORKERS"),
    // printed by --check above the effective config.
    std::vector<std::string> origins;
    // The command line as given (argv[0] first): a reload runs it again,
    // with --check first, then in place of this process.
    std::vector<std::string> command_line;
    // --reload (development): a supervisor even for one serving process,
    // which reloads when the watched files change. No dirs: the directory
    // the app is imported from (frontend.chdir, or the current one).
    bool reload = false;
    reload_watch_options reload_watch;
};

// Serves until SIGTERM/SIGINT (signals: README.md); returns the process exit code. Config and
// plugin errors are printed to stderr and give exit code 2; nothing starts.
// Prefork: returns in the supervisor and in each serving process, each with
// its own exit code.
M0_INTERNAL_API int run_server(const run_options& options);

// `m0 plugins`: every plugin found, with its ABI and build signature.
M0_INTERNAL_API int list_plugins(const run_options& options);

}  // namespace m0
