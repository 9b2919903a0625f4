#include "pool_config.hpp"

#include <algorithm>
#include <string>

namespace m0::pool {

pool_options read_pool_options(const config_node& section, const char* env_ring, unsigned reactors, unsigned cpus) {
    using namespace std::chrono;
    // Each key is checked on its own, so one run reports all their errors.
    config_errors errors;
    errors.check([&] {
        section.allow_keys({"threads", "max_threads", "idle_timeout", "spin", "reactor_spin", "batch_sched",
                            "ring", "ring_capacity", "max_job_age", "colocate", "growth"});
    });
    pool_options o;
    errors.check([&] {
        // auto: a user who sized the pool (threads or max_threads) gets the
        // eager growth of that size, exactly as before the governor existed;
        // with neither, the pool starts at one thread and grows only while
        // its threads are blocked outside the interpreter.
        const std::string growth = section.one_of("growth", "auto", {"auto", "blocked", "eager"});
        const bool sized = section.has("threads") || section.has("max_threads");
        o.growth = growth == "blocked" || (growth == "auto" && !sized) ? growth_kind::blocked : growth_kind::eager;
        section.set_effective("growth", to_string(o.growth));
    });
    errors.check([&] { o.threads = static_cast<unsigned>(section.integer("threads", 1, 1, max_pool_threads)); });
    errors.check([&] {
        const unsigned bound = o.growth == growth_kind::blocked ? std::max(o.threads, default_blocked_max_threads)
                                                                : o.threads;
        o.max_threads = static_cast<unsigned>(section.integer("max_threads", bound, o.threads, max_pool_threads));
    });
    errors.check([&] {
        o.idle_timeout = section.duration("idle_timeout", seconds(30));
        if (o.idle_timeout <= nanoseconds(0)) section.fail("idle_timeout", "expected a duration > 0");
    });
    errors.check([&] {
        o.spin = section.duration("spin", nanoseconds(0));
        if (o.spin < nanoseconds(0) || o.spin > seconds(1)) section.fail("spin", "expected a duration in 0..1s");
    });
    errors.check([&] {
        o.reactor_spin = section.duration("reactor_spin", nanoseconds(0));
        if (o.reactor_spin < nanoseconds(0) || o.reactor_spin > milliseconds(1))
            section.fail("reactor_spin", "expected a duration in 0..1ms");
    });
    errors.check([&] { o.batch_sched = section.boolean("batch_sched", true); });
    errors.check([&] {
        // auto: on when every core runs a reactor of the deployment. Then no
        // core is idle for a pool thread to use, and beside its reactor it
        // saves the cross-core wakes and cache transfers; with cores to
        // spare, a pool thread (or C code that releases the GIL) may use them.
        const std::string mode = section.string("colocate", "auto");
        if (mode == "auto") {
            o.colocate = reactors >= cpus;
        } else {
            try {
                o.colocate = section.boolean("colocate", false);
            } catch (const config_error&) {
                section.fail("colocate", "expected auto or a boolean (true/false, yes/no, on/off), found '" + mode + "'");
            }
        }
        section.set_effective_boolean("colocate", o.colocate);
    });
    errors.check([&] {
        const std::string ring = section.one_of("ring", "vyukov", {"vyukov", "lockfree", "none"});
        o.ring = ring == "lockfree" ? ring_kind::lockfree : ring == "none" ? ring_kind::none : ring_kind::vyukov;
        if (env_ring && std::string(env_ring) == "0") {
            o.ring = ring_kind::none;
            section.set_effective("ring", "none");
        }
    });
    errors.check([&] {
        const auto capacity = section.integer("ring_capacity", 1024, 2, std::int64_t{1} << 20);
        if ((capacity & (capacity - 1)) != 0)
            section.fail("ring_capacity", "expected a power of two, found " + std::to_string(capacity));
        o.ring_capacity = static_cast<std::size_t>(capacity);
    });
    errors.check([&] {
        o.max_job_age = section.duration("max_job_age", microseconds(200));
        if (o.max_job_age <= nanoseconds(0)) section.fail("max_job_age", "expected a duration > 0");
    });
    errors.throw_if_any();
    return o;
}

}  // namespace m0::pool
