#pragma once
// `scheduler.listener: reuseport | shared`, read the same way by every
// scheduler of this project. `server.listener`, its spelling before
// schedulers were plugins, is still accepted: it is the default, and setting
// both to different values is an error.
#include <m0/config.hpp>
#include <m0/plugin.hpp>
#include <m0/scheduler.hpp>

namespace m0::reactors {

// Throws m0::config_error naming the key. `fallback`: the scheduler's
// default when neither spelling is set.
listener_strategy read_listener_key(const plugin_context& ctx,
                                    listener_strategy fallback = listener_strategy::reuseport);

}  // namespace m0::reactors
