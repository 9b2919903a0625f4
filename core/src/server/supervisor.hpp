#pragma once
// The prefork supervisor (docs/architecture.md, "Processes"): forks N serving
// processes, respawns one that dies, replaces one that asks for it (or uses
// too much memory) one at a time, resizes on SIGTTIN/SIGTTOU, reloads on
// SIGHUP, and on SIGTERM/SIGINT drains them all. It knows nothing about what
// a serving process does: the caller's hooks prepare the process state, and
// in a child supervise() simply returns.
#include <sys/types.h>

#include <csignal>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

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
    // A serving process whose resident memory exceeds this is replaced
    // (checked every second); 0: never.
    std::uint64_t max_rss = 0;
    // Metrics slots (telemetry::metrics_table processes): each live process
    // gets one no other live process uses; 0: no metrics.
    unsigned metrics_slots = 0;
    // Serving processes of the m0 this one replaced by exec on SIGHUP: they
    // serve until every new process is ready, then drain.
    std::vector<pid_t> previous;
};

struct fork_hooks {
    std::function<void()> before_fork;        // supervisor, right before fork()
    std::function<void()> after_fork_parent;  // supervisor, also when fork() failed
    std::function<void(unsigned slot)> after_fork_child;  // the new process, first thing
    std::function<void(unsigned slot)> open_slot;   // supervisor, before a slot's process forks
    std::function<void(unsigned slot)> close_slot;  // supervisor, a slot removed (SIGTTOU)
    // SIGHUP: starts a check of the configuration as it is now (a child
    // process); returns its pid, or -1 if it could not start.
    std::function<pid_t()> start_check;
    // The check passed: exec m0 anew in this process (same pid), handing it
    // the serving processes to drain once its own are ready. Returns only
    // when the exec failed.
    std::function<void(const std::vector<pid_t>& serving)> reexec;
    // Service manager notifications (sd_notify states).
    std::function<void(std::string_view state)> notify;
};

struct supervise_result {
    bool child = false;        // true: this is a new serving process; serve, then exit
    unsigned index = 0;        // the child's slot, 0..count-1
    unsigned count = 0;        // slots when the child was forked (SIGTTIN/SIGTTOU change it)
    unsigned metrics_slot = 0; // the child's metrics slot (< metrics_slots), when metrics are on
    int exit_code = 0;         // the supervisor's exit code (child == false)
};

// The signal a supervised child treats as "stop at once"; SIGTERM/SIGINT
// are "drain" and repeating them changes nothing, because the same signal may
// reach a child twice (from a terminal's process group and from its
// supervisor). A second stop signal at the supervisor is forwarded as this.
inline constexpr int hard_stop_signal = SIGQUIT;

// Every signal the supervisor takes (synchronously); blocked in the
// supervisor before any thread exists, and in its children until they serve.
M0_INTERNAL_API sigset_t supervisor_signals();

// Runs the supervisor on the calling thread, which must be the process's
// only thread, with supervisor_signals() blocked. Returns in the
// supervisor with its exit code once every child is gone (0 after a stop by
// signal, 1 after a crash loop), or in a child right after after_fork_child,
// with SIGTERM/SIGINT/SIGQUIT blocked, SIGCHLD unblocked, and a parent-death
// signal (SIGTERM) set so that the child drains if the supervisor dies.
M0_INTERNAL_API supervise_result supervise(const supervisor_options& options, const fork_hooks& hooks);

// In a serving process: tells the supervisor it accepts connections (a new
// process replaces an old one only from then on).
M0_INTERNAL_API void report_ready(unsigned slot);
// In a serving process: asks the supervisor for a replacement
// (server.max_requests reached); it is told to drain once that one is ready.
// `urgent` (the process gave up on stuck application code): the replacement
// starts at once, ahead of any other, and the old process gets a short drain.
M0_INTERNAL_API void ask_for_replacement(bool urgent = false);

// In a serving process: the signal its request-deadline watchdog raises to
// tell the main thread that the process cannot serve on (m0/deadline.hpp).
// Blocked with supervisor_signals().
M0_INTERNAL_API int give_up_signal();

// Threads of the calling process (from /proc/self/task); 0 if unknown.
M0_INTERNAL_API unsigned process_thread_count();

}  // namespace m0
