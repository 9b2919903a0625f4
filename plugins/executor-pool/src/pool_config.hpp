#pragma once
// Reads `executor.pool` into pool_options (kept apart from the pool itself so
// tests and benchmarks build a pool without a config tree).
#include <m0/config.hpp>

#include "pool_options.hpp"

namespace m0::pool {

// Throws m0::config_error naming the offending key. `env_ring` is the value
// of M0_POOL_RING (nullptr when unset); "0" forces `ring: none`.
// `reactors`: reactor threads of the whole deployment (workers × threads),
// and `cpus` the machine's: `colocate: auto` is on when reactors >= cpus.
pool_options read_pool_options(const config_node& section, const char* env_ring, unsigned reactors, unsigned cpus);

}  // namespace m0::pool
