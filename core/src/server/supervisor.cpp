#include "server/supervisor.hpp"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <m0/log.hpp>

namespace m0 {
namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds respawn_backoff_step{100};
constexpr milliseconds respawn_backoff_max{1000};
// Nothing is due: wake up anyway now and then to reap what a lost SIGCHLD
// (several deaths coalesce into one) may have left.
constexpr milliseconds idle_tick{1000};

std::string signal_name(int sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string describe(int status) {
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return "was killed by " + signal_name(WTERMSIG(status)) + (WCOREDUMP(status) ? " (core dumped)" : "");
    return "ended with status " + std::to_string(status);
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

long long millis(clock_type::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

timespec to_timespec(clock_type::duration d) {
    if (d < clock_type::duration::zero()) d = clock_type::duration::zero();
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

sigset_t signal_set(std::initializer_list<int> signals) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : signals) sigaddset(&set, s);
    return set;
}

class supervisor {
public:
    supervisor(const supervisor_options& options, const fork_hooks& hooks)
        : options_(options), hooks_(hooks), slots_(options.processes), self_(::getpid()),
          waited_(signal_set({SIGTERM, SIGINT, hard_stop_signal, SIGCHLD, SIGUSR1})) {}

    supervise_result run() {
        pthread_sigmask(SIG_BLOCK, &waited_, nullptr);
        ::prctl(PR_SET_NAME, "m0-supervisor", 0, 0, 0);
        for (unsigned i = 0; i < slots_.size(); ++i)
            if (spawn(i)) return {true, i, 0};
        while (!stopping_ || live_children() > 0) {
            const timespec wait = to_timespec(next_wakeup() - clock_type::now());
            const int sig = ::sigtimedwait(&waited_, nullptr, &wait);
            if (sig == SIGTERM || sig == SIGINT || sig == hard_stop_signal) on_stop_signal(sig);
            if (sig == SIGUSR1) forward_reopen();
            reap();
            if (auto child = respawn_due()) return *child;
            enforce_deadline();
        }
        log::info("supervisor: every worker process has stopped");
        return {false, 0, exit_code_};
    }

private:
    struct slot {
        pid_t pid = 0;  // 0: not running
        clock_type::time_point started{};
        std::optional<clock_type::time_point> respawn_at;
    };

    // Returns true in the new process.
    bool spawn(unsigned index) {
        auto& s = slots_[index];
        s.respawn_at.reset();
        // Buffered output would be written twice, once by each process.
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        if (hooks_.before_fork) hooks_.before_fork();
        const pid_t pid = ::fork();
        if (pid == 0) {
            become_child();
            return true;
        }
        const int err = errno;
        if (hooks_.after_fork_parent) hooks_.after_fork_parent();
        if (pid < 0) {
            log::error("supervisor: cannot fork worker process " + std::to_string(index) + ": " +
                       std::generic_category().message(err));
            s.started = clock_type::now();
            after_death(index, true);
            return false;
        }
        s.pid = pid;
        s.started = clock_type::now();
        log::info("supervisor: worker process " + std::to_string(index) + " started (pid " + std::to_string(pid) + ")");
        return false;
    }

    void become_child() {
        // From here on the kernel sends SIGTERM (blocked, so: a drain) when
        // the supervisor dies; if it died before this line, stop at once.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (::getppid() != self_) ::_exit(1);
        ::prctl(PR_SET_NAME, "m0-worker-proc", 0, 0, 0);
        if (hooks_.after_fork_child) hooks_.after_fork_child();
        // The child serves with the usual mask (its stop signals blocked and
        // taken synchronously); SIGCHLD is the app's business again.
        const sigset_t chld = signal_set({SIGCHLD});
        pthread_sigmask(SIG_UNBLOCK, &chld, nullptr);
    }

    // SIGUSR1 (logrotate): every serving process reopens its log files.
    void forward_reopen() {
        for (const auto& s : slots_)
            if (s.pid > 0) ::kill(s.pid, SIGUSR1);
    }

    unsigned live_children() const {
        unsigned n = 0;
        for (const auto& s : slots_) n += s.pid > 0;
        return n;
    }

    void forward(int sig) {
        for (const auto& s : slots_)
            if (s.pid > 0) ::kill(s.pid, sig);
    }

    void on_stop_signal(int sig) {
        if (stopping_ && hard_) return;
        const auto now = clock_type::now();
        for (auto& s : slots_) s.respawn_at.reset();
        if (sig == hard_stop_signal || stopping_) {
            log::warning("supervisor: received " + signal_name(sig) + ", stopping " +
                         std::to_string(live_children()) + " worker process(es) at once");
            stopping_ = hard_ = true;
            forward(hard_stop_signal);
            deadline_ = now + options_.kill_grace;
            return;
        }
        auto timeout = options_.drain_timeout;
        if (sig == SIGINT) timeout = std::min(options_.interactive_drain_timeout, timeout);
        log::info("supervisor: received " + signal_name(sig) + ", draining " + std::to_string(live_children()) +
                  " worker process(es) (timeout " + std::to_string(timeout.count()) +
                  " ms); send it again to stop at once");
        stopping_ = true;
        forward(sig);
        deadline_ = now + timeout + options_.kill_grace;
    }

    void reap() {
        int status = 0;
        pid_t pid;
        while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
            for (unsigned i = 0; i < slots_.size(); ++i) {
                if (slots_[i].pid != pid) continue;
                slots_[i].pid = 0;
                on_exit(i, pid, status);
                break;
            }
        }
    }

    void on_exit(unsigned index, pid_t pid, int status) {
        const auto lived = clock_type::now() - slots_[index].started;
        std::string what = "worker process " + std::to_string(index) + " (pid " + std::to_string(pid) + ") " +
                           describe(status) + " after " + std::to_string(millis(lived)) + " ms";
        const auto level = failed(status) ? log::level::warning : log::level::info;
        if (stopping_) {
            log::write(level, "supervisor: " + what);
            return;
        }
        log::write(level, "supervisor: " + what);
        after_death(index, lived < options_.quick_death);
    }

    // Schedules the respawn of a slot whose process died (or never forked),
    // with a backoff while processes keep dying young.
    void after_death(unsigned index, bool quick) {
        consecutive_quick_ = quick ? consecutive_quick_ + 1 : 0;
        if (consecutive_quick_ >= options_.crash_loop_limit) {
            log::error("supervisor: worker processes keep dying at start: " + std::to_string(consecutive_quick_) +
                       " times in a row within " + std::to_string(options_.quick_death.count()) +
                       " ms of starting; giving up (see the errors above)");
            give_up();
            return;
        }
        const auto backoff = quick ? std::min(respawn_backoff_step * consecutive_quick_, respawn_backoff_max)
                                   : milliseconds::zero();
        log::info("supervisor: respawning worker process " + std::to_string(index) +
                  (backoff.count() ? " in " + std::to_string(backoff.count()) + " ms" : std::string()));
        slots_[index].respawn_at = clock_type::now() + backoff;
    }

    void give_up() {
        exit_code_ = 1;
        stopping_ = true;
        for (auto& s : slots_) s.respawn_at.reset();
        forward(SIGTERM);
        deadline_ = clock_type::now() + options_.drain_timeout + options_.kill_grace;
    }

    std::optional<supervise_result> respawn_due() {
        if (stopping_) return std::nullopt;
        const auto now = clock_type::now();
        for (unsigned i = 0; i < slots_.size(); ++i) {
            if (!slots_[i].respawn_at || *slots_[i].respawn_at > now) continue;
            if (spawn(i)) return supervise_result{true, i, 0};
        }
        return std::nullopt;
    }

    clock_type::time_point next_wakeup() const {
        auto next = clock_type::now() + idle_tick;
        for (const auto& s : slots_)
            if (s.respawn_at) next = std::min(next, *s.respawn_at);
        if (stopping_) next = std::min(next, deadline_);
        return next;
    }

    void enforce_deadline() {
        if (!stopping_ || clock_type::now() < deadline_) return;
        for (unsigned i = 0; i < slots_.size(); ++i) {
            const pid_t pid = slots_[i].pid;
            if (pid <= 0) continue;
            log::warning("supervisor: worker process " + std::to_string(i) + " (pid " + std::to_string(pid) +
                         ") did not stop in time; killing it");
            ::kill(pid, SIGKILL);
            int status = 0;
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            slots_[i].pid = 0;
        }
    }

    const supervisor_options& options_;
    const fork_hooks& hooks_;
    std::vector<slot> slots_;
    const pid_t self_;
    const sigset_t waited_;
    bool stopping_ = false;
    bool hard_ = false;
    clock_type::time_point deadline_{};
    unsigned consecutive_quick_ = 0;
    int exit_code_ = 0;
};

}  // namespace

supervise_result supervise(const supervisor_options& options, const fork_hooks& hooks) {
    return supervisor(options, hooks).run();
}

unsigned process_thread_count() {
    std::error_code ec;
    unsigned n = 0;
    for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
    return ec ? 0 : n;
}

}  // namespace m0
