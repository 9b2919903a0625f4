#include "server/reload.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string_view>

#include <m0/log.hpp>

#include "server/socket_activation.hpp"
#include "server/supervisor.hpp"

namespace m0 {
namespace {

// The supervisor's socket layout, handed to its reload check.
constexpr const char* layout_variable = "M0_RELOAD_SOCKETS";

std::string layout_token(const socket_layout& l) {
    return l.strategy == listener_strategy::shared ? "shared" : "reuseport:" + std::to_string(l.reuseport_sockets);
}

std::string describe_token(const std::string& token) {
    if (token == "shared") return to_string(socket_layout{listener_strategy::shared, 1});
    unsigned n = 0;
    if (std::sscanf(token.c_str(), "reuseport:%u", &n) == 1)
        return to_string(socket_layout{listener_strategy::reuseport, n});
    return token;
}

std::vector<char*> exec_argv(std::vector<std::string>& args) {
    std::vector<char*> out;
    for (auto& a : args) out.push_back(a.data());
    out.push_back(nullptr);
    return out;
}

}  // namespace

// M0_PREVIOUS_WORKERS, set by reexec().
std::vector<pid_t> take_previous_workers() {
    std::vector<pid_t> out;
    if (const char* list = std::getenv("M0_PREVIOUS_WORKERS")) {
        std::istringstream in(list);
        for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
    }
    ::unsetenv("M0_PREVIOUS_WORKERS");
    return out;
}

std::string own_executable() {
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : path.string();
}

pid_t start_check(const std::string& exe, const run_options& options, const socket_layout& running) {
    std::vector<std::string> args = options.command_line;
    args.push_back("--check");
    // Read by the child's check (reload_layout_error); set here, before the
    // fork, since the child calls nothing but system calls until it execs.
    ::setenv(layout_variable, layout_token(running).c_str(), 1);
    // Built before the fork: the child calls nothing but system calls until
    // it execs, since another thread (metrics) may hold the allocator's lock.
    auto argv = exec_argv(args);
    const pid_t pid = ::fork();
    if (pid != 0) {
        ::unsetenv(layout_variable);  // for the check only
        return pid;
    }
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
}

std::string reload_layout_error(const socket_layout& wanted, const std::string& scheduler) {
    const char* running = std::getenv(layout_variable);
    // Shared sockets stay shared across a reload whatever the new config
    // says (listen_sockets): nothing is given up.
    if (!running || std::string_view(running) == "shared" || layout_token(wanted) == running) return {};
    return "this reload would change the listening sockets from " + describe_token(running) + " to " +
           to_string(wanted) + " (scheduler " + scheduler +
           "): connections queued on sockets given up would be lost, so it takes a restart, not a reload";
}

// This process becomes a new m0 (same pid, so its serving processes stay
// its children and the pid file stays true), which builds the deployment
// from the config and code as they are now, takes the listening sockets over
// (LISTEN_FDS), starts its own serving processes and drains `serving` once
// they are ready. The signal mask stays blocked across the exec, so no
// signal can kill it in between.
void reexec(const std::string& exe, const run_options& options, listen_sockets& sockets,
            const std::vector<pid_t>& serving) {
    if (exe.empty() || ::access(exe.c_str(), X_OK) != 0) return;
    std::string list;
    for (pid_t pid : serving) list += std::to_string(pid) + " ";
    ::setenv("M0_PREVIOUS_WORKERS", list.c_str(), 1);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    pass_sockets_to_exec(sockets.for_exec());
    std::vector<std::string> args = options.command_line;
    auto argv = exec_argv(args);
    ::execv(exe.c_str(), argv.data());
    ::unsetenv("M0_PREVIOUS_WORKERS");
}

int keep_previous_workers(std::vector<pid_t> previous) {
    log::error("supervisor: reload failed (see above); the " + std::to_string(previous.size()) +
               " previous worker process(es) keep serving; fix the deployment and restart m0");
    supervisor_options so;
    so.processes = 0;
    so.previous = std::move(previous);
    return supervise(so, fork_hooks{}).exit_code;
}

}  // namespace m0
