#include "server/process_signals.hpp"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <m0/log.hpp>

namespace m0 {

std::string signal_name(int sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

void on_other_signal(int sig, bool supervised, const std::function<void()>& reopen_logs) {
    if (sig == SIGUSR1) {
        reopen_logs();
    } else if (supervised) {
        log::info("received " + signal_name(sig) + ": ignored by a worker process; send it to the supervisor (pid " +
                  std::to_string(::getppid()) + ")");
    } else if (sig == SIGHUP || sig == SIGTTIN || sig == SIGTTOU) {
        log::info("received " + signal_name(sig) +
                  ": ignored; reloading and resizing need a supervisor (server.workers > 1)");
    } else {
        log::info("received " + signal_name(sig) + ": ignored");
    }
}

}  // namespace m0
