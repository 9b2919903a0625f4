#pragma once
// What `m0 --check` says about the database connections a deployment may
// hold: an application that keeps one connection per thread (Django's
// persistent connections, SQLAlchemy's thread-local sessions) holds as many
// as its executors may run threads, in every serving process.
#include <cstdint>
#include <ostream>

#include <m0/executor.hpp>

#include "server/deployment.hpp"

namespace m0 {

// PostgreSQL's default max_connections is 100, 3 of them for superusers;
// above this, a deployment leaves too little room for anything else.
inline constexpr std::uint64_t connections_warning_above = 90;

// Threads of one executor that may hold a connection at once, per process:
// its bound (nullopt: it reports none, e.g. `inline`).
std::optional<std::uint64_t> connections_per_process(const executor_stats& st);

// One line per executor with a bound, then the total over server.workers,
// with a warning above connections_warning_above.
void print_connection_report(const deployment& d, std::ostream& out);

}  // namespace m0
