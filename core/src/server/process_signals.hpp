#pragma once
// The signals of a serving process that are not "stop": what each does, and
// how each is named in the log.
#include <functional>
#include <string>

namespace m0 {

// "SIGHUP", or "signal 42".
std::string signal_name(int sig);

// SIGUSR1 reopens the access log (reopen_logs); every other one is logged
// with the reason it is ignored, and none kills the process.
void on_other_signal(int sig, bool supervised, const std::function<void()>& reopen_logs);

}  // namespace m0
