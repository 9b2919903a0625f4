#include "server/connection_report.hpp"

#include <string>

namespace m0 {

std::optional<std::uint64_t> connections_per_process(const executor_stats& st) { return st.threads_max; }

void print_connection_report(const deployment& d, std::ostream& out) {
    std::uint64_t per_process = 0;
    bool any = false;
    for (std::size_t i = 0; i < d.executors.size(); ++i) {
        const auto bound = connections_per_process(d.executors[i]->stats());
        if (!bound) continue;
        any = true;
        per_process += *bound;
        const auto& spec = d.executor_specs[i];
        out << "m0: executor " << (spec.name.empty() ? spec.type : spec.name + " (" + spec.type + ")")
            << ": at most " << *bound << " thread(s) per process\n";
    }
    if (!any) return;
    // A thread written off at a request deadline keeps what its call took
    // (its connection) until it returns, beside its replacement: up to
    // server.max_written_off of them per process.
    bool deadlines = false;
    for (const auto& f : d.frontends) deadlines = deadlines || f.request_timeout.count() > 0;
    const std::uint64_t written_off = deadlines ? d.cfg.max_written_off : 0;
    const std::uint64_t total = (per_process + written_off) * d.cfg.workers;
    out << "m0: database connections, one per thread (Django's persistent connections): " << d.cfg.workers
        << " process(es) x (" << per_process << " threads + " << written_off
        << " written off at a request deadline) = " << total << " (PostgreSQL allows 100 by default)\n";
    if (total > connections_warning_above)
        out << "m0: warning: " << total
            << " connections leave PostgreSQL's default max_connections (100) no room for anything else; lower "
               "server.workers, executor.pool.max_threads or server.max_written_off, close connections after each request "
               "(CONN_MAX_AGE = 0), or raise the database's limit\n";
}

}  // namespace m0
