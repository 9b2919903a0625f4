// The `m0` binary: the command line (main.cpp, run_cli), with CPython embedded
// by the Python plugins.
#include "main/cli.hpp"

int main(int argc, char** argv) {
    m0::cli_host host;
#ifdef M0_PYTHON_LINKED_INTO_BINARY
    // libs/python-embed/CMakeLists.txt: the interpreter's code is the
    // binary's own, not the shared libpython's.
    host.python_mode = "embedded (" M0_PROBE_PYTHON ", " M0_PYTHON_LINKED_INTO_BINARY
                       " linked into m0, started by the Python plugins)";
#endif
    return m0::run_cli(argc, argv, host);
}
