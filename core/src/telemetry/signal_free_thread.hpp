#pragma once
// Starts a telemetry thread (access log writer, metrics listener, metrics
// sampler) with every signal blocked: signals are the serving thread's (or
// the supervisor's) to take with sigwait, and a SIGCHLD or SIGQUIT delivered
// to a helper thread would be lost or kill the process.
#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace m0::telemetry {

template <class F>
std::thread start_signal_free_thread(F&& fn) {
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    std::thread t(std::forward<F>(fn));
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return t;
}

}  // namespace m0::telemetry
