#include <m0/plugin.hpp>

#include "reactors_scheduler.hpp"

M0_SCHEDULER_PLUGIN("reactors",
                    "one reactor thread per core, each accepting for itself on sockets the kernel places "
                    "connections on (SO_REUSEPORT, or one shared listener)",
                    m0::scheduler_reactors::make_reactors_scheduler);
