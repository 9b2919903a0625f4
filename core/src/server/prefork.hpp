#pragma once
// server.workers > 1: this process becomes the supervisor of that many
// serving processes, forked from the deployment built and validated here
// (the application is imported once and shared copy-on-write). It holds the
// listening sockets, laid out as the scheduler asks; each process serves on
// its own share of them.
#include <sys/types.h>
#include <vector>

#include "server/deployment.hpp"
#include "server/socket_activation.hpp"

namespace m0 {

// Returns the supervisor's exit code, or, in a serving process, that
// process's. `previous`: serving processes of the m0 this one replaced on
// SIGHUP, drained once the new ones serve.
int run_prefork(deployment& d, const run_options& options, std::vector<inherited_socket> inherited,
                std::vector<pid_t> previous);

}  // namespace m0
