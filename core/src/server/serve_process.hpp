#pragma once
// One serving process: its reactors (from the deployment's scheduler), its
// executors and frontends, until a stop signal; then the drain, the
// per-reactor report and the exit code.
#include <chrono>

#include "server/deployment.hpp"
#include "server/listen_sockets.hpp"

namespace m0 {

// SIGINT is the interactive stop: the same drain, but a user at a terminal
// does not want to wait the full production drain timeout.
inline constexpr std::chrono::milliseconds interactive_drain_timeout{5000};

// What the serving process is: the only one, or one of a supervisor's.
struct process_role {
    bool supervised = false;
    unsigned index = 0;
    unsigned count = 1;
    unsigned metrics_slot = 0;  // its slot of the metrics table, if below the table's size
    // Sockets opened for it (by its supervisor, or passed by systemd); null:
    // the scheduler binds its own.
    listen_sockets* sockets = nullptr;
    // Its row of the deployment's load table (supervised processes only).
    deployment_load load;
};

// Serves until a stop signal, then drains and reports. Expects SIGTERM and
// SIGINT (and, supervised, SIGQUIT) blocked. Returns the exit code.
int serve(deployment& d, const process_role& role);

}  // namespace m0
