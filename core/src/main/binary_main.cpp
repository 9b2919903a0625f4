// The `m0` binary: the command line (main.cpp, run_cli), with CPython embedded
// by the Python plugins.
#include "main/cli.hpp"

int main(int argc, char** argv) { return m0::run_cli(argc, argv, m0::cli_host{}); }
