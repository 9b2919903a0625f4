#pragma once
// The m0 command line (`m0 --help`), run by the `m0` binary and, hosted in
// the user's own CPython, by the wheel's extension module.
#include <string>
#include <vector>

#include <m0/api.hpp>

namespace m0 {

// What differs between the binary that embeds CPython and m0 hosted in a
// running interpreter. The defaults are the binary's.
struct cli_host {
    // `m0 --version`: how m0 runs Python code (embedded or hosted, which CPython).
    std::string python_mode = "embedded (" M0_PROBE_PYTHON ", started by the Python plugins)";
    // The interpreter `--app X --interface auto` imports X with when no venv
    // is given; empty: the embedded CPython's executable.
    std::string python_executable;
    // What a reload (SIGHUP) executes in place of argv[0], in front of the
    // other arguments: hosted, `python -m m0`, since the process is a Python.
    std::vector<std::string> command_prefix;
    // Printed after `m0 --help`: commands the host adds (the wheel's `m0 sdk`).
    std::string help_extra;
    // Those commands' names (run by the host before the core sees them),
    // named beside 'plugins' when a command is unknown.
    std::vector<std::string> extra_commands;
};

// Parses argv (argv[0] is only a name) and serves, checks or lists plugins;
// returns the process exit code (`m0 --help`: 0, 1 start-up failure, 2 usage
// or configuration error).
M0_INTERNAL_API int run_cli(int argc, char** argv, const cli_host& host);

}  // namespace m0
