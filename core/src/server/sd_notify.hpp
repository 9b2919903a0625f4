#pragma once
// systemd's notification protocol (sd_notify(3)) without libsystemd: one
// datagram of "KEY=value" lines to the unix socket named by $NOTIFY_SOCKET
// (a path, or an abstract name written with a leading '@'). Type=notify
// units learn from it when m0 is ready, reloading and stopping.
#include <string_view>

#include <m0/api.hpp>

namespace m0 {

// Sends `state` ("READY=1\nMAINPID=42"); nothing when NOTIFY_SOCKET is unset.
// Errors are logged once and otherwise ignored: serving does not depend on it.
M0_INTERNAL_API void sd_notify(std::string_view state);

}  // namespace m0
