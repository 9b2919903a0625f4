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
    const std::uint64_t total = per_process * d.cfg.workers;
    out << "m0: database connections, one per thread (Django's persistent connections): " << d.cfg.workers
        << " process(es) x " << per_process << " = " << total << " (PostgreSQL allows 100 by default)\n";
    if (total > connections_warning_above)
        out << "m0: warning: " << total
            << " connections leave PostgreSQL's default max_connections (100) no room for anything else; lower "
               "server.workers or executor.pool.max_threads, close connections after each request "
               "(CONN_MAX_AGE = 0), or raise the database's limit\n";
}

}  // namespace m0
