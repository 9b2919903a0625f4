#include "server/supervisor.hpp"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <m0/log.hpp>

namespace m0 {
namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds respawn_backoff_step{100};
constexpr milliseconds respawn_backoff_max{1000};
// Nothing is due: wake up anyway now and then to reap what a lost SIGCHLD
// (several deaths coalesce into one) may have left, and to look at memory.
constexpr milliseconds idle_tick{1000};
constexpr unsigned max_processes = 256;

// Realtime signals queue (one per send, with the sender's pid), unlike
// SIGCHLD: no readiness report is lost when several processes start at once.
int ready_signal() { return SIGRTMIN; }
int replace_signal() { return SIGRTMIN + 1; }
// A replacement for a process that gave up (urgent): a short drain, since
// what it still runs is stuck.
constexpr milliseconds urgent_drain{3000};

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

// Resident memory of `pid` in bytes; 0 if unknown.
std::uint64_t resident_bytes(pid_t pid) {
    std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
    std::uint64_t size = 0, resident = 0;
    if (!(statm >> size >> resident)) return 0;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::string mib(std::uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::string process(unsigned index, pid_t pid) {
    return "worker process " + std::to_string(index) + " (pid " + std::to_string(pid) + ")";
}

class supervisor {
public:
    supervisor(const supervisor_options& options, const fork_hooks& hooks)
        : options_(options), hooks_(hooks), slots_(options.processes), self_(::getpid()),
          waited_(supervisor_signals()) {
        for (pid_t pid : options.previous) previous_.push_back({pid, 0, {}});
    }

    supervise_result run() {
        pthread_sigmask(SIG_BLOCK, &waited_, nullptr);
        ::prctl(PR_SET_NAME, "m0-supervisor", 0, 0, 0);
        for (unsigned i = 0; i < slots_.size(); ++i)
            if (auto child = spawn(i)) return *child;
        auto next_memory_check = clock_type::now() + idle_tick;
        while (!stopping_ || live_children() > 0) {
            const timespec wait = to_timespec(next_wakeup() - clock_type::now());
            siginfo_t info{};
            const int sig = ::sigtimedwait(&waited_, &info, &wait);
            if (sig > 0)
                if (auto child = on_signal(sig, info)) return *child;
            reap();
            if (clock_type::now() >= next_memory_check) {
                check_memory();
                next_memory_check = clock_type::now() + idle_tick;
            }
            if (auto child = respawn_due()) return *child;
            if (auto child = replace_next()) return *child;
            enforce_deadlines();
        }
        log::info("supervisor: every worker process has stopped");
        return {false, 0, 0, 0, exit_code_};
    }

private:
    struct slot {
        pid_t pid = 0;  // 0: not running
        unsigned metrics = 0;
        bool ready = false;
        clock_type::time_point started{};
        std::optional<clock_type::time_point> respawn_at;
        // The process this slot's new one replaces: it serves until the
        // new one is ready, then drains.
        pid_t predecessor = 0;
        unsigned predecessor_metrics = 0;
        std::string reason;  // why it is replaced
    };
    // A process no slot owns any more: one of the replaced m0's (before it
    // is told to drain), or one told to drain (then with a kill deadline).
    struct retired {
        pid_t pid;
        unsigned metrics;
        std::optional<clock_type::time_point> kill_at;
    };

    std::optional<supervise_result> on_signal(int sig, const siginfo_t& info) {
        if (sig == ready_signal()) {
            on_ready(info.si_pid);
        } else if (sig == replace_signal() && info.si_value.sival_int == 1) {
            replace_urgently(info.si_pid);
            if (auto child = replace_next()) return *child;
        } else if (sig == replace_signal()) {
            ask_replace(info.si_pid, "it served server.max_requests requests");
        } else if (sig == SIGTERM || sig == SIGINT || sig == hard_stop_signal) {
            on_stop_signal(sig);
        } else if (sig == SIGUSR1) {
            log::info("supervisor: received SIGUSR1: every worker process reopens its log files");
            for (pid_t pid : live_pids()) ::kill(pid, SIGUSR1);
        } else if (sig == SIGHUP) {
            on_reload();
        } else if (sig == SIGTTIN) {
            return add_process();
        } else if (sig == SIGTTOU) {
            remove_process();
        } else if (sig == SIGUSR2) {
            log::info("supervisor: received SIGUSR2: ignored (SIGHUP reloads the code, the configuration and the m0 "
                      "binary)");
        }
        return std::nullopt;
    }

    // Returns the child's result in the new process.
    std::optional<supervise_result> spawn(unsigned index) {
        auto& s = slots_[index];
        s.respawn_at.reset();
        s.ready = false;
        s.metrics = free_metrics_slot();
        if (hooks_.open_slot) {
            try {
                hooks_.open_slot(index);
            } catch (const std::exception& e) {
                log::error("supervisor: cannot open the listening sockets of worker process " + std::to_string(index) +
                           ": " + e.what());
                s.started = clock_type::now();
                after_death(index, true);
                return std::nullopt;
            }
        }
        // Buffered output would be written twice, once by each process.
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        if (hooks_.before_fork) hooks_.before_fork();
        const pid_t pid = ::fork();
        if (pid == 0) {
            become_child(index);
            return supervise_result{true, index, static_cast<unsigned>(slots_.size()), s.metrics, 0};
        }
        const int err = errno;
        if (hooks_.after_fork_parent) hooks_.after_fork_parent();
        s.started = clock_type::now();
        if (pid < 0) {
            log::error("supervisor: cannot fork worker process " + std::to_string(index) + ": " +
                       std::generic_category().message(err));
            after_death(index, true);
            return std::nullopt;
        }
        s.pid = pid;
        log::info("supervisor: " + process(index, pid) + " started");
        return std::nullopt;
    }

    void become_child(unsigned index) {
        // From here on the kernel sends SIGTERM (blocked, so: a drain) when
        // the supervisor dies; if it died before this line, stop at once.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (::getppid() != self_) ::_exit(1);
        ::prctl(PR_SET_NAME, "m0-worker-proc", 0, 0, 0);
        if (hooks_.after_fork_child) hooks_.after_fork_child(index);
        // The child serves with the usual mask (its stop signals blocked and
        // taken synchronously); SIGCHLD is the app's business again.
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        pthread_sigmask(SIG_UNBLOCK, &chld, nullptr);
    }

    unsigned free_metrics_slot() const {
        if (options_.metrics_slots == 0) return 0;
        std::vector<bool> used(options_.metrics_slots);
        auto mark = [&](pid_t pid, unsigned m) {
            if (pid > 0 && m < used.size()) used[m] = true;
        };
        for (const auto& s : slots_) {
            mark(s.pid, s.metrics);
            mark(s.predecessor, s.predecessor_metrics);
        }
        for (const auto& r : previous_) mark(r.pid, r.metrics);
        for (const auto& r : draining_) mark(r.pid, r.metrics);
        for (unsigned m = 0; m < used.size(); ++m)
            if (!used[m]) return m;
        return options_.metrics_slots;  // none free: the process serves uncounted
    }

    std::vector<pid_t> live_pids() const {
        std::vector<pid_t> out;
        for (const auto& s : slots_) {
            if (s.pid > 0) out.push_back(s.pid);
            if (s.predecessor > 0) out.push_back(s.predecessor);
        }
        for (const auto& r : previous_) out.push_back(r.pid);
        for (const auto& r : draining_) out.push_back(r.pid);
        return out;
    }

    unsigned live_children() const { return static_cast<unsigned>(live_pids().size()) + (check_pid_ > 0); }

    void on_ready(pid_t pid) {
        for (unsigned i = 0; i < slots_.size(); ++i) {
            auto& s = slots_[i];
            if (s.pid != pid || s.ready) continue;
            s.ready = true;
            if (s.predecessor > 0) {
                log::info("supervisor: " + process(i, pid) + " serves; draining pid " + std::to_string(s.predecessor) +
                          ", which it replaces (" + s.reason + ")");
                drain(s.predecessor, s.predecessor_metrics);
                s.predecessor = 0;
            }
        }
        if (!std::all_of(slots_.begin(), slots_.end(), [](const slot& s) { return s.ready; })) return;
        if (!previous_.empty()) {
            log::info("supervisor: reloaded: " + std::to_string(slots_.size()) +
                      " new worker process(es) serve; draining the " + std::to_string(previous_.size()) +
                      " previous one(s)");
            for (const auto& r : previous_) drain(r.pid, r.metrics);
            previous_.clear();
            ready_once_ = true;
            notify("READY=1\nSTATUS=reloaded\nMAINPID=" + std::to_string(::getpid()));
        }
        if (!ready_once_) {
            ready_once_ = true;
            notify("READY=1\nSTATUS=serving with " + std::to_string(slots_.size()) + " worker processes\nMAINPID=" +
                   std::to_string(::getpid()));
        }
    }

    // The process drains (SIGTERM), and is killed if still there after the
    // drain timeout and the grace (urgent: after a short drain).
    void drain(pid_t pid, unsigned metrics) {
        ::kill(pid, SIGTERM);
        const bool urgent = std::find(urgent_.begin(), urgent_.end(), pid) != urgent_.end();
        if (urgent) std::erase(urgent_, pid);
        draining_.push_back(
            {pid, metrics, clock_type::now() + (urgent ? urgent_drain : options_.drain_timeout + options_.kill_grace)});
    }

    // A process that gave up on stuck application code: its replacement
    // goes first, and starts even while another replacement is under way.
    void replace_urgently(pid_t pid) {
        if (stopping_) return;
        for (unsigned i = 0; i < slots_.size(); ++i) {
            if (slots_[i].pid != pid || !slots_[i].ready) continue;
            std::erase_if(replace_queue_, [pid](const auto& q) { return q.first == pid; });
            urgent_.push_back(pid);
            replace_queue_.emplace_front(pid, "it gave up on stuck application code (request deadlines)");
            return;
        }
    }

    void ask_replace(pid_t pid, const std::string& reason) {
        if (stopping_) return;
        for (const auto& q : replace_queue_)
            if (q.first == pid) return;
        for (unsigned i = 0; i < slots_.size(); ++i)
            if (slots_[i].pid == pid && slots_[i].ready) replace_queue_.emplace_back(pid, reason);
    }

    // One replacement at a time: none starts while a process waits for its
    // successor or drains.
    bool replacing() const {
        if (!draining_.empty() || !previous_.empty() || check_pid_ > 0) return true;
        return std::any_of(slots_.begin(), slots_.end(), [](const slot& s) { return s.predecessor > 0; });
    }

    std::optional<supervise_result> replace_next() {
        while (!stopping_ && !replace_queue_.empty() &&
               (!replacing() || std::find(urgent_.begin(), urgent_.end(), replace_queue_.front().first) != urgent_.end())) {
            const auto [pid, reason] = replace_queue_.front();
            replace_queue_.pop_front();
            for (unsigned i = 0; i < slots_.size(); ++i) {
                auto& s = slots_[i];
                if (s.pid != pid) continue;
                log::info("supervisor: replacing " + process(i, pid) + ": " + reason);
                s.predecessor = pid;
                s.predecessor_metrics = s.metrics;
                s.reason = reason;
                s.pid = 0;
                return spawn(i);
            }
        }
        return std::nullopt;
    }

    void check_memory() {
        if (options_.max_rss == 0 || stopping_) return;
        for (unsigned i = 0; i < slots_.size(); ++i) {
            const auto& s = slots_[i];
            if (s.pid <= 0 || !s.ready) continue;
            const auto rss = resident_bytes(s.pid);
            if (rss > options_.max_rss)
                ask_replace(s.pid, "it uses " + mib(rss) + " of memory, over server.max_rss (" + mib(options_.max_rss) + ")");
        }
    }

    void on_reload() {
        if (stopping_) {
            log::info("supervisor: received SIGHUP while stopping: ignored");
            return;
        }
        if (check_pid_ > 0) {
            // The files may have changed after the check read them (--reload
            // saves in a row): checked again if this check fails. If it
            // passes, the new m0 reads them as they are then anyway.
            log::info("supervisor: received SIGHUP: a reload is already being checked; checking again if it fails");
            reload_again_ = true;
            return;
        }
        log::info("supervisor: received SIGHUP: checking the configuration as it is now before reloading");
        // systemd (Type=notify-reload) wants the monotonic time of the request with it.
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        notify("RELOADING=1\nSTATUS=reloading\nMONOTONIC_USEC=" +
               std::to_string(static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000));
        check_pid_ = hooks_.start_check ? hooks_.start_check() : -1;
        if (check_pid_ < 0) {
            check_pid_ = 0;
            log::error("supervisor: reload refused: the configuration check could not start; the current worker "
                       "processes keep serving");
            notify("READY=1");
        }
    }

    void on_check_done(int status) {
        if (stopping_) return;
        const bool again = std::exchange(reload_again_, false);
        if (failed(status)) {
            log::error("supervisor: reload refused: the configuration check " + describe(status) +
                       " (its errors are above); the current worker processes keep serving");
            notify("READY=1\nSTATUS=reload refused");
            if (again) on_reload();
            return;
        }
        log::info("supervisor: configuration OK; starting m0 anew (same pid) with new worker processes, the current "
                  "ones drain once those serve");
        hooks_.reexec(live_pids());
        log::error("supervisor: reload failed: cannot execute m0 again; the current worker processes keep serving");
        notify("READY=1");
    }

    std::optional<supervise_result> add_process() {
        if (stopping_) return std::nullopt;
        if (slots_.size() >= max_processes) {
            log::warning("supervisor: received SIGTTIN: already " + std::to_string(max_processes) +
                         " worker processes, the most there can be");
            return std::nullopt;
        }
        slots_.emplace_back();
        log::info("supervisor: received SIGTTIN: adding worker process " + std::to_string(slots_.size() - 1) + " (now " +
                  std::to_string(slots_.size()) + ")");
        return spawn(static_cast<unsigned>(slots_.size() - 1));
    }

    void remove_process() {
        if (stopping_) return;
        if (slots_.size() <= 1) {
            log::info("supervisor: received SIGTTOU: ignored, one worker process is the fewest");
            return;
        }
        const unsigned index = static_cast<unsigned>(slots_.size() - 1);
        auto s = slots_.back();
        slots_.pop_back();
        log::info("supervisor: received SIGTTOU: removing worker process " + std::to_string(index) + " (now " +
                  std::to_string(slots_.size()) + ")" + (s.pid > 0 ? ", draining pid " + std::to_string(s.pid) : ""));
        if (s.pid > 0) drain(s.pid, s.metrics);
        if (s.predecessor > 0) drain(s.predecessor, s.predecessor_metrics);
        if (hooks_.close_slot) hooks_.close_slot(index);
    }

    void notify(const std::string& state) {
        if (hooks_.notify) hooks_.notify(state);
    }

    void forward(int sig) {
        for (pid_t pid : live_pids()) ::kill(pid, sig);
        if (check_pid_ > 0) ::kill(check_pid_, SIGKILL);
    }

    void on_stop_signal(int sig) {
        if (stopping_ && hard_) return;
        const auto now = clock_type::now();
        for (auto& s : slots_) s.respawn_at.reset();
        replace_queue_.clear();
        if (!stopping_) notify("STOPPING=1\nSTATUS=draining");
        if (sig == hard_stop_signal || stopping_) {
            log::warning("supervisor: received " + signal_name(sig) + ", stopping " +
                         std::to_string(live_pids().size()) + " worker process(es) at once");
            stopping_ = hard_ = true;
            forward(hard_stop_signal);
            deadline_ = now + options_.kill_grace;
            return;
        }
        auto timeout = options_.drain_timeout;
        if (sig == SIGINT) timeout = std::min(options_.interactive_drain_timeout, timeout);
        log::info("supervisor: received " + signal_name(sig) + ", draining " + std::to_string(live_pids().size()) +
                  " worker process(es) (timeout " + std::to_string(timeout.count()) +
                  " ms); send it again to stop at once");
        stopping_ = true;
        forward(sig);
        deadline_ = now + timeout + options_.kill_grace;
    }

    void reap() {
        int status = 0;
        pid_t pid;
        while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) on_exit(pid, status);
    }

    void on_exit(pid_t pid, int status) {
        if (pid == check_pid_) {
            check_pid_ = 0;
            on_check_done(status);
            return;
        }
        const auto level = failed(status) ? log::level::warning : log::level::info;
        for (auto* list : {&previous_, &draining_}) {
            auto it = std::find_if(list->begin(), list->end(), [&](const retired& r) { return r.pid == pid; });
            if (it == list->end()) continue;
            list->erase(it);
            log::write(level, "supervisor: previous worker process (pid " + std::to_string(pid) + ") " + describe(status));
            return;
        }
        for (unsigned i = 0; i < slots_.size(); ++i) {
            auto& s = slots_[i];
            if (s.predecessor == pid) {
                // It died while its successor was starting: nothing left to drain.
                s.predecessor = 0;
                log::write(level, "supervisor: " + process(i, pid) + ", being replaced, " + describe(status));
                return;
            }
            if (s.pid != pid) continue;
            s.pid = 0;
            const auto lived = clock_type::now() - s.started;
            log::write(level, "supervisor: " + process(i, pid) + " " + describe(status) + " after " +
                                  std::to_string(millis(lived)) + " ms");
            if (!stopping_) after_death(i, lived < options_.quick_death);
            return;
        }
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
        notify("STOPPING=1\nSTATUS=worker processes keep dying at start");
        for (auto& s : slots_) s.respawn_at.reset();
        forward(SIGTERM);
        deadline_ = clock_type::now() + options_.drain_timeout + options_.kill_grace;
    }

    std::optional<supervise_result> respawn_due() {
        if (stopping_) return std::nullopt;
        const auto now = clock_type::now();
        for (unsigned i = 0; i < slots_.size(); ++i) {
            if (!slots_[i].respawn_at || *slots_[i].respawn_at > now) continue;
            if (auto child = spawn(i)) return child;
        }
        return std::nullopt;
    }

    clock_type::time_point next_wakeup() const {
        auto next = clock_type::now() + idle_tick;
        for (const auto& s : slots_)
            if (s.respawn_at) next = std::min(next, *s.respawn_at);
        for (const auto& r : draining_)
            if (r.kill_at) next = std::min(next, *r.kill_at);
        if (stopping_) next = std::min(next, deadline_);
        return next;
    }

    void kill_now(pid_t pid, const std::string& what) {
        log::warning("supervisor: " + what + " did not stop in time; killing it");
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }

    void enforce_deadlines() {
        const auto now = clock_type::now();
        for (auto it = draining_.begin(); it != draining_.end();) {
            if (stopping_ ? now < deadline_ : (!it->kill_at || now < *it->kill_at)) {
                ++it;
                continue;
            }
            kill_now(it->pid, "previous worker process (pid " + std::to_string(it->pid) + ")");
            it = draining_.erase(it);
        }
        if (!stopping_ || now < deadline_) return;
        for (auto& r : previous_) kill_now(r.pid, "previous worker process (pid " + std::to_string(r.pid) + ")");
        previous_.clear();
        for (unsigned i = 0; i < slots_.size(); ++i) {
            auto& s = slots_[i];
            if (s.pid > 0) kill_now(s.pid, process(i, s.pid));
            if (s.predecessor > 0) kill_now(s.predecessor, process(i, s.predecessor));
            s.pid = s.predecessor = 0;
        }
    }

    const supervisor_options& options_;
    const fork_hooks& hooks_;
    std::vector<slot> slots_;
    std::vector<retired> previous_;
    std::vector<retired> draining_;
    std::deque<std::pair<pid_t, std::string>> replace_queue_;
    std::vector<pid_t> urgent_;  // processes that gave up: replaced first, drained briefly
    pid_t check_pid_ = 0;
    const pid_t self_;
    const sigset_t waited_;
    bool stopping_ = false;
    bool hard_ = false;
    bool ready_once_ = false;
    bool reload_again_ = false;  // a SIGHUP came during the reload's check
    clock_type::time_point deadline_{};
    unsigned consecutive_quick_ = 0;
    int exit_code_ = 0;
};

void tell_supervisor(int sig, int value) {
    sigval v{};
    v.sival_int = value;
    ::sigqueue(::getppid(), sig, v);
}

}  // namespace

sigset_t supervisor_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, hard_stop_signal, SIGCHLD, SIGUSR1, SIGUSR2, SIGHUP, SIGTTIN, SIGTTOU})
        sigaddset(&set, s);
    sigaddset(&set, ready_signal());
    sigaddset(&set, replace_signal());
    sigaddset(&set, give_up_signal());
    return set;
}

supervise_result supervise(const supervisor_options& options, const fork_hooks& hooks) {
    return supervisor(options, hooks).run();
}

void report_ready(unsigned slot) { tell_supervisor(ready_signal(), static_cast<int>(slot)); }

void ask_for_replacement(bool urgent) { tell_supervisor(replace_signal(), urgent ? 1 : 0); }

int give_up_signal() { return SIGRTMIN + 2; }

unsigned process_thread_count() {
    std::error_code ec;
    unsigned n = 0;
    for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
    return ec ? 0 : n;
}

}  // namespace m0
