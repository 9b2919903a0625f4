#pragma once
// What happens on SIGHUP under a supervisor: `m0 <same arguments> --check`
// in a child first; if it passes, the supervisor re-execs itself (same pid)
// as the m0 on disk now, takes its listening sockets over, starts new serving
// processes from the config and code as they are now, and drains the old
// ones once the new serve. A check that fails (or a reload that would change
// the listening sockets) is refused, and the old processes serve on.
#include <string>
#include <sys/types.h>
#include <vector>

#include <m0/scheduler.hpp>

#include "server/listen_sockets.hpp"
#include "server/server_runner.hpp"

namespace m0 {

// The serving processes of the m0 that exec'd this one on SIGHUP; empty
// otherwise.
std::vector<pid_t> take_previous_workers();

// m0 as it is on disk now (an upgraded binary too): the path this process
// was started from, read before anything could replace it.
std::string own_executable();

// The check, in a child: its effective config to /dev/null, its errors to
// m0's log. `running`: the socket layout the supervisor serves with, which
// the new config must keep.
pid_t start_check(const std::string& exe, const run_options& options, const socket_layout& running);

// In a check run by start_check: the error that refuses the reload when
// `wanted` (the new config's layout, with its scheduler's name) is not the
// running one; empty when they match or this is no reload's check.
std::string reload_layout_error(const socket_layout& wanted, const std::string& scheduler);

// Becomes the new m0 (returns only if the exec failed).
void reexec(const std::string& exe, const run_options& options, listen_sockets& sockets,
            const std::vector<pid_t>& serving);

// A reload whose new deployment failed to build although its check passed
// (the files changed again in between): the previous serving processes go
// on serving under this process until it is stopped. Returns the exit code.
int keep_previous_workers(std::vector<pid_t> previous);

}  // namespace m0
