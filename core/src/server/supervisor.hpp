#pragma once
// The prefork supervisor (docs/architecture.md, "Processes"): forks N serving
// processes, respawns one that dies, and on SIGTERM/SIGINT drains them all.
// It knows nothing about what a serving process does: the caller's fork hooks
// prepare the process state, and in a child supervise() simply returns.
#include <csignal>
#include <chrono>
#include <functional>

#include <m0/api.hpp>

namespace m0 {

struct supervisor_options {
    unsigned processes = 2;
    // How long children may take to drain after a SIGTERM (SIGINT: the
    // shorter interactive timeout), and how much longer the supervisor waits
    // before it kills what is left.
    std::chrono::milliseconds drain_timeout{30000};
    std::chrono::milliseconds interactive_drain_timeout{5000};
    std::chrono::milliseconds kill_grace{5000};
    // Children that die this soon after their start, this many times in a
    // row, mean a crash loop: the supervisor stops and exits 1.
    std::chrono::milliseconds quick_death{1000};
    unsigned crash_loop_limit = 5;
};

struct fork_hooks {
    std::function<void()> before_fork;        // supervisor, right before fork()
    std::function<void()> after_fork_parent;  // supervisor, also when fork() failed
    std::function<void()> after_fork_child;   // the new process, first thing
};

struct supervise_result {
    bool child = false;   // true: this is a new serving process; serve, then exit
    unsigned index = 0;   // the child's slot, 0..processes-1
    int exit_code = 0;    // the supervisor's exit code (child == false)
};

// The signal a supervised child treats as "stop at once"; SIGTERM/SIGINT
// are "drain" and repeating them changes nothing, because the same signal may
// reach a child twice (from a terminal's process group and from its
// supervisor). A second stop signal at the supervisor is forwarded as this.
inline constexpr int hard_stop_signal = SIGQUIT;

// Runs the supervisor on the calling thread, which must be the process's
// only thread, with SIGTERM, SIGINT and SIGCHLD blocked. Returns in the
// supervisor with its exit code once every child is gone (0 after a stop by
// signal, 1 after a crash loop), or in a child right after after_fork_child,
// with SIGTERM/SIGINT/SIGQUIT blocked, SIGCHLD unblocked, and a parent-death
// signal (SIGTERM) set so that the child drains if the supervisor dies.
M0_INTERNAL_API supervise_result supervise(const supervisor_options& options, const fork_hooks& hooks);

// Threads of the calling process (from /proc/self/task); 0 if unknown.
M0_INTERNAL_API unsigned process_thread_count();

}  // namespace m0
