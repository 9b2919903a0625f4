#include "telemetry/metrics_table.hpp"

#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>

#include <m0/tls/connection.hpp>

namespace m0::telemetry {

static_assert(static_cast<std::size_t>(tls::handshake_failure::other) + 1 == tls_failure_reasons,
              "a slot per TLS handshake failure reason");

namespace {

constexpr std::size_t round_up(std::size_t n) {
    constexpr std::size_t align = alignof(std::max_align_t);
    return (n + align - 1) / align * align;
}

constexpr const char* class_names[status_classes] = {"none", "1xx", "2xx", "3xx", "4xx", "5xx"};

std::uint64_t load(const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); }

std::string seconds_text(std::uint64_t us) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(us) / 1e6);
    return buf;
}

// Label values are a path prefix and a plugin name; escaped all the same.
std::string label_value(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '\\' || c == '"') out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    return out;
}

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    return out + "\"";
}

// A plugin's value: integers as integers (counters stay exact past 1e6).
std::string number_text(double v) {
    char buf[40];
    if (v == static_cast<double>(static_cast<long long>(v)) && v > -9e15 && v < 9e15)
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else
        std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string nanoseconds_text(std::uint64_t ns) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(ns) / 1e9);
    return buf;
}

// The label pairs of a plugin series as stored: name=value, each ended by \x1f.
template <class F>
void for_each_label(std::string_view stored, F&& fn) {
    while (!stored.empty()) {
        const auto end = stored.find('\x1f');
        const std::string_view pair = stored.substr(0, end);
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos) fn(pair.substr(0, eq), pair.substr(eq + 1));
        if (end == std::string_view::npos) break;
        stored.remove_prefix(end + 1);
    }
}

}  // namespace

struct metrics_table::totals {
    std::uint64_t open = 0, in_flight = 0, executor_jobs = 0, accepted = 0, bytes_in = 0, bytes_out = 0;
    std::uint64_t proxy_refused = 0, forwarded_ignored = 0;
    std::uint64_t tls_handshakes = 0, tls_resumed = 0;
    std::uint64_t http2_connections = 0, http2_streams = 0, http2_calm = 0;
    std::array<std::uint64_t, tls_failure_reasons> tls_failures{};
    unsigned processes_alive = 0;
    struct process {
        int pid = 0;  // 0: not running
        std::uint64_t requests = 0;
        // Per reactor: connections open now (0 once the process is gone) and
        // accepted, so that operators see how the scheduler placed them.
        std::vector<std::uint64_t> reactor_open, reactor_accepted;
    };
    std::vector<process> processes;
    struct per_mount {
        std::array<std::uint64_t, status_classes> by_class{};
        std::array<std::uint64_t, latency_bounds_us.size() + 1> latency{};
        std::uint64_t latency_sum_us = 0;
        std::uint64_t deadlines = 0;
        std::uint64_t count() const {
            std::uint64_t n = 0;
            for (auto v : latency) n += v;
            return n;
        }
    };
    std::vector<per_mount> mounts;
    struct per_executor {
        std::uint32_t known = 0;
        std::uint64_t threads = 0, busy = 0, parked = 0, queue_depth = 0, jobs_done = 0, wait_sum_ns = 0;
        std::uint64_t deadlines = 0, written_off = 0, given_up = 0, written_off_now = 0;
        std::uint64_t blocked = 0;
        std::int64_t loop_lag_ns = 0;
        std::array<std::uint64_t, queue_wait_histogram::bounds_us.size() + 1> wait{};
        bool has(std::uint32_t field) const { return (known & field) != 0; }
    };
    std::vector<per_executor> executors;
    struct series {
        std::string name, labels, help;  // labels as stored: name=value pairs, each ended by \x1f
        plugin_series::kind_t kind;
        double value = 0;
    };
    std::vector<series> plugins;
};

metrics_table::metrics_table(unsigned processes, unsigned reactors, std::vector<mount_label> mounts,
                             std::vector<executor_label> executors, unsigned spare)
    : processes_(processes + spare), listed_(processes), reactors_(reactors), mounts_(std::move(mounts)),
      executors_(std::move(executors)),
      started_(std::chrono::steady_clock::now()) {
    if (mounts_.empty()) throw std::invalid_argument("metrics_table: no mount");
    stride_ = round_up(sizeof(reactor_slot)) + mounts_.size() * round_up(sizeof(mount_counters));
    // Layout: process heads, reactor slots, executor slots, plugin series tables.
    const std::size_t head_bytes = round_up(sizeof(process_head) * processes_);
    const std::size_t slot_bytes = stride_ * processes_ * reactors_;
    const std::size_t executor_bytes = round_up(sizeof(executor_slot) * processes_ * executors_.size());
    const std::size_t plugin_bytes = sizeof(plugin_series_table) * processes_;
    size_ = head_bytes + slot_bytes + executor_bytes + plugin_bytes;
    // Shared and anonymous: inherited by every forked serving process.
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("cannot map the metrics table: ") + std::strerror(errno));
    mapping_ = static_cast<char*>(p);
    heads_ = reinterpret_cast<process_head*>(mapping_);
    for (unsigned i = 0; i < processes_; ++i) new (&heads_[i]) process_head();
    base_ = mapping_ + head_bytes;
    for (unsigned i = 0; i < processes_ * reactors_; ++i) {
        char* s = base_ + i * stride_;
        new (s) reactor_slot();
        for (std::size_t m = 0; m < mounts_.size(); ++m)
            new (s + round_up(sizeof(reactor_slot)) + m * round_up(sizeof(mount_counters))) mount_counters();
    }
    executor_slots_ = reinterpret_cast<executor_slot*>(base_ + slot_bytes);
    for (std::size_t i = 0; i < processes_ * executors_.size(); ++i) new (&executor_slots_[i]) executor_slot();
    plugin_tables_ = reinterpret_cast<plugin_series_table*>(base_ + slot_bytes + executor_bytes);
    for (unsigned i = 0; i < processes_; ++i) new (&plugin_tables_[i]) plugin_series_table();
}

metrics_table::~metrics_table() { ::munmap(mapping_, size_); }

reactor_slot& metrics_table::slot(unsigned process, unsigned reactor) const noexcept {
    return *reinterpret_cast<reactor_slot*>(base_ + (process * reactors_ + reactor) * stride_);
}

mount_counters& metrics_table::mount(reactor_slot& s, std::size_t index) const noexcept {
    return *reinterpret_cast<mount_counters*>(reinterpret_cast<char*>(&s) + round_up(sizeof(reactor_slot)) +
                                              index * round_up(sizeof(mount_counters)));
}

executor_slot& metrics_table::executor(unsigned process, std::size_t index) const noexcept {
    return executor_slots_[process * executors_.size() + index];
}

plugin_series_table& metrics_table::plugin_series_of(unsigned process) const noexcept {
    return plugin_tables_[process];
}

std::size_t metrics_table::mount_index(std::string_view prefix) const noexcept {
    for (std::size_t i = 0; i < mounts_.size(); ++i)
        if (mounts_[i].prefix == prefix) return i;
    return 0;
}

void metrics_table::clear_gauges(unsigned process) noexcept {
    for (unsigned r = 0; r < reactors_; ++r) {
        auto& s = slot(process, r).stats;
        s.live_connections.store(0, std::memory_order_relaxed);
        s.in_flight.store(0, std::memory_order_relaxed);
        s.executor_jobs.store(0, std::memory_order_relaxed);
    }
    for (std::size_t e = 0; e < executors_.size(); ++e) {
        auto& x = executor(process, e);
        for (auto* g : {&x.threads, &x.busy, &x.parked, &x.queue_depth, &x.written_off_now, &x.blocked})
            g->store(0, std::memory_order_relaxed);
        x.loop_lag_ns.store(0, std::memory_order_relaxed);
    }
}

void metrics_table::process_started(unsigned process, int pid) noexcept {
    clear_gauges(process);
    heads_[process].draining.store(false, std::memory_order_relaxed);
    heads_[process].pid.store(pid, std::memory_order_release);
}

void metrics_table::process_ended(unsigned process) noexcept {
    heads_[process].pid.store(0, std::memory_order_release);
    clear_gauges(process);
}

void metrics_table::process_draining(unsigned process) noexcept {
    heads_[process].draining.store(true, std::memory_order_release);
}

bool metrics_table::deployment_draining() const noexcept {
    bool any = false;
    for (unsigned p = 0; p < processes_; ++p) {
        const bool draining = heads_[p].draining.load(std::memory_order_acquire);
        const int pid = heads_[p].pid.load(std::memory_order_acquire);
        if (draining)
            any = true;
        else if (pid != 0 && ::kill(pid, 0) == 0)
            return false;
    }
    return any;
}

metrics_table::totals metrics_table::sum() const {
    totals t;
    t.mounts.resize(mounts_.size());
    t.executors.resize(executors_.size());
    for (unsigned p = 0; p < processes_; ++p) {
        // A process killed outright leaves its gauges behind: they count
        // only while its pid is alive (the supervisor reaps it at once).
        const int pid = heads_[p].pid.load(std::memory_order_acquire);
        const bool alive = pid != 0 && ::kill(pid, 0) == 0;
        if (alive) ++t.processes_alive;
        auto& proc = t.processes.emplace_back();
        proc.pid = alive ? pid : 0;
        for (unsigned r = 0; r < reactors_; ++r) {
            auto& s = slot(p, r);
            proc.requests += load(s.stats.requests);
            proc.reactor_open.push_back(alive ? load(s.stats.live_connections) : 0);
            proc.reactor_accepted.push_back(load(s.stats.accepted));
            if (alive) {
                t.open += load(s.stats.live_connections);
                t.in_flight += load(s.stats.in_flight);
                t.executor_jobs += load(s.stats.executor_jobs);
            }
            t.accepted += load(s.stats.accepted);
            t.bytes_in += load(s.bytes_in);
            t.bytes_out += load(s.bytes_out);
            t.proxy_refused += load(s.proxy_headers_refused);
            t.forwarded_ignored += load(s.forwarded_headers_ignored);
            t.tls_handshakes += load(s.tls_handshakes);
            t.tls_resumed += load(s.tls_resumed);
            for (std::size_t k = 0; k < tls_failure_reasons; ++k) t.tls_failures[k] += load(s.tls_failures[k]);
            t.http2_connections += load(s.http2_connections);
            t.http2_streams += load(s.http2_streams);
            t.http2_calm += load(s.http2_calm);
            for (std::size_t m = 0; m < mounts_.size(); ++m) {
                auto& c = mount(s, m);
                auto& into = t.mounts[m];
                for (std::size_t k = 0; k < status_classes; ++k) into.by_class[k] += load(c.by_class[k]);
                for (std::size_t k = 0; k < into.latency.size(); ++k) into.latency[k] += load(c.latency[k]);
                into.latency_sum_us += load(c.latency_sum_us);
                into.deadlines += load(c.deadlines);
            }
        }
        sum_executors(p, alive, t);
        sum_plugin_series(p, alive, t);
    }
    return t;
}

// Gauges of the processes alive, summed (the loop lag: the largest);
// counters of every process that ever served in the slot.
void metrics_table::sum_executors(unsigned p, bool alive, totals& t) const {
    for (std::size_t e = 0; e < executors_.size(); ++e) {
        const auto& x = executor(p, e);
        auto& into = t.executors[e];
        into.known |= x.known.load(std::memory_order_relaxed);
        into.jobs_done += load(x.jobs_done);
        for (std::size_t b = 0; b < into.wait.size(); ++b) into.wait[b] += load(x.wait[b]);
        into.wait_sum_ns += load(x.wait_sum_ns);
        into.deadlines += load(x.deadlines);
        into.written_off += load(x.threads_written_off);
        into.given_up += load(x.processes_given_up);
        if (!alive) continue;
        into.written_off_now += load(x.written_off_now);
        into.threads += load(x.threads);
        into.busy += load(x.busy);
        into.parked += load(x.parked);
        into.blocked += load(x.blocked);
        into.queue_depth += load(x.queue_depth);
        into.loop_lag_ns = std::max(into.loop_lag_ns, x.loop_lag_ns.load(std::memory_order_relaxed));
    }
}

// Series of the same name and labels are one, whatever process reported them.
void metrics_table::sum_plugin_series(unsigned p, bool alive, totals& t) const {
    const auto& table = plugin_series_of(p);
    const std::uint32_t n = std::min<std::uint32_t>(table.count.load(std::memory_order_acquire),
                                                    plugin_series_table::capacity);
    for (std::uint32_t i = 0; i < n; ++i) {
        const auto& e = table.entries[i];
        const double v = e.value.load(std::memory_order_relaxed);
        auto it = std::find_if(t.plugins.begin(), t.plugins.end(),
                               [&](const totals::series& s) { return s.name == e.name && s.labels == e.labels; });
        if (it == t.plugins.end()) it = t.plugins.insert(t.plugins.end(), {e.name, e.labels, e.help, e.kind, 0});
        if (e.kind == plugin_series::counter || alive) it->value += v;
    }
}

std::string metrics_table::prometheus() const {
    const totals t = sum();
    std::string out;
    auto metric = [&](std::string_view name, std::string_view type, std::string_view help) {
        out.append("# HELP ").append(name).append(" ").append(help).append("\n");
        out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
    };
    auto mount_labels = [&](std::size_t m) {
        return "frontend=\"" + label_value(mounts_[m].frontend) + "\",mount=\"" +
               label_value(mounts_[m].prefix.empty() ? "/" : mounts_[m].prefix) + "\"";
    };
    metric("m0_requests_total", "counter",
           "Responses finished, by status class (none: the connection ended before a response began).");
    for (std::size_t m = 0; m < mounts_.size(); ++m)
        for (std::size_t k = 0; k < status_classes; ++k)
            out += "m0_requests_total{" + mount_labels(m) + ",code=\"" + class_names[k] + "\"} " +
                   std::to_string(t.mounts[m].by_class[k]) + "\n";
    metric("m0_request_deadlines_total", "counter",
           "Requests whose application passed its request deadline: the server answered 504 or aborted the response.");
    for (std::size_t m = 0; m < mounts_.size(); ++m)
        out += "m0_request_deadlines_total{" + mount_labels(m) + "} " + std::to_string(t.mounts[m].deadlines) + "\n";
    metric("m0_request_duration_seconds", "histogram",
           "Time from a request's head being parsed to its response being handed to the connection.");
    for (std::size_t m = 0; m < mounts_.size(); ++m) {
        const auto& c = t.mounts[m];
        std::uint64_t cumulative = 0;
        for (std::size_t k = 0; k < latency_bounds_us.size(); ++k) {
            cumulative += c.latency[k];
            out += "m0_request_duration_seconds_bucket{" + mount_labels(m) + ",le=\"" +
                   seconds_text(latency_bounds_us[k]) + "\"} " + std::to_string(cumulative) + "\n";
        }
        cumulative += c.latency.back();
        out += "m0_request_duration_seconds_bucket{" + mount_labels(m) + ",le=\"+Inf\"} " +
               std::to_string(cumulative) + "\n";
        out += "m0_request_duration_seconds_sum{" + mount_labels(m) + "} " + seconds_text(c.latency_sum_us) + "\n";
        out += "m0_request_duration_seconds_count{" + mount_labels(m) + "} " + std::to_string(cumulative) + "\n";
    }
    auto single = [&](std::string_view name, std::string_view type, std::string_view help, std::uint64_t v) {
        metric(name, type, help);
        out.append(name).append(" ").append(std::to_string(v)).append("\n");
    };
    single("m0_connections_open", "gauge", "Client connections open now.", t.open);
    single("m0_requests_in_flight", "gauge", "Requests read whose response has not finished.", t.in_flight);
    single("m0_executor_jobs", "gauge", "Jobs submitted to executors and not completed yet (queued or running).",
           t.executor_jobs);
    single("m0_connections_accepted_total", "counter", "Client connections accepted.", t.accepted);
    single("m0_received_bytes_total", "counter", "Bytes read from client connections.", t.bytes_in);
    single("m0_sent_bytes_total", "counter", "Bytes written to client connections.", t.bytes_out);
    single("m0_proxy_headers_refused_total", "counter",
           "Connections closed for a missing or malformed PROXY protocol header.", t.proxy_refused);
    single("m0_forwarded_headers_ignored_total", "counter",
           "Requests whose malformed forwarding headers from a trusted proxy were ignored.", t.forwarded_ignored);
    single("m0_tls_handshakes_total", "counter", "TLS handshakes completed.", t.tls_handshakes);
    single("m0_tls_resumed_total", "counter", "TLS handshakes that resumed a session (ticket or session id).",
           t.tls_resumed);
    metric("m0_tls_handshake_failures_total", "counter", "TLS handshakes that failed, by reason.");
    for (std::size_t k = 1; k < tls_failure_reasons; ++k)
        out += "m0_tls_handshake_failures_total{reason=\"" +
               std::string(tls::to_string(static_cast<tls::handshake_failure>(k))) + "\"} " +
               std::to_string(t.tls_failures[k]) + "\n";
    single("m0_http2_connections_total", "counter", "Connections that spoke HTTP/2 (ALPN h2 or the h2c preface).",
           t.http2_connections);
    single("m0_http2_streams_total", "counter", "HTTP/2 streams opened by clients.", t.http2_streams);
    single("m0_http2_enhance_your_calm_total", "counter",
           "HTTP/2 connections ended with GOAWAY ENHANCE_YOUR_CALM (floods, too many resets or invalid frames).",
           t.http2_calm);
    single("m0_worker_processes", "gauge", "Serving processes running now.", t.processes_alive);
    single("m0_reactor_threads", "gauge", "Reactor threads per serving process.", reactors_);
    prometheus_reactors(t, out);
    prometheus_executors(t, out);
    prometheus_plugins(t, out);
    return out;
}

// Per serving process and reactor: where the scheduler placed connections.
void metrics_table::prometheus_reactors(const totals& t, std::string& out) const {
    auto family = [&](std::string_view name, std::string_view type, std::string_view help, bool open) {
        out.append("# HELP ").append(name).append(" ").append(help).append("\n");
        out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
        for (std::size_t p = 0; p < t.processes.size(); ++p) {
            const auto& proc = t.processes[p];
            if (!proc.pid && (open || p >= listed_)) continue;
            for (unsigned r = 0; r < reactors_; ++r)
                out.append(name)
                    .append("{process=\"" + std::to_string(p) + "\",reactor=\"" + std::to_string(r) + "\"} ")
                    .append(std::to_string(open ? proc.reactor_open[r] : proc.reactor_accepted[r]))
                    .append("\n");
        }
    };
    family("m0_reactor_connections_open", "gauge", "Client connections open now, per serving process and reactor.",
           true);
    family("m0_reactor_connections_accepted_total", "counter",
           "Client connections accepted, per serving process and reactor.", false);
}

void metrics_table::prometheus_executors(const totals& t, std::string& out) const {
    auto labels = [&](std::size_t e) {
        return "executor=\"" + label_value(executors_[e].name) + "\",type=\"" + label_value(executors_[e].type) + "\"";
    };
    // A family is written only when some executor reports it.
    auto family = [&](std::uint32_t field, std::string_view name, std::string_view type, std::string_view help,
                      auto&& body) {
        bool any = false;
        for (const auto& x : t.executors) any = any || x.has(field);
        if (!any) return;
        out.append("# HELP ").append(name).append(" ").append(help).append("\n");
        out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
        for (std::size_t e = 0; e < t.executors.size(); ++e)
            if (t.executors[e].has(field)) body(e, t.executors[e]);
    };
    using f = executor_slot::field;
    family(f::has_busy, "m0_executor_threads", "gauge",
           "Executor threads by state: busy (in a job), parked (blocked waiting for work), idle (neither); "
           "blocked: of the busy ones, those that ran little lately (waiting on I/O, a lock or the GIL).",
           [&](std::size_t e, const totals::per_executor& x) {
               const std::uint64_t idle = x.threads > x.busy + x.parked ? x.threads - x.busy - x.parked : 0;
               out += "m0_executor_threads{" + labels(e) + ",state=\"busy\"} " + std::to_string(x.busy) + "\n";
               out += "m0_executor_threads{" + labels(e) + ",state=\"idle\"} " + std::to_string(idle) + "\n";
               out += "m0_executor_threads{" + labels(e) + ",state=\"parked\"} " + std::to_string(x.parked) + "\n";
               if (x.has(f::has_blocked))
                   out += "m0_executor_threads{" + labels(e) + ",state=\"blocked\"} " + std::to_string(x.blocked) +
                          "\n";
               if (x.has(f::has_written_off))
                   out += "m0_executor_threads{" + labels(e) + ",state=\"written_off\"} " +
                          std::to_string(x.written_off_now) + "\n";
           });
    family(f::has_deadlines, "m0_executor_deadlines_total", "counter",
           "Application calls on this executor that passed their request deadline (server.request_timeout).",
           [&](std::size_t e, const totals::per_executor& x) {
               out += "m0_executor_deadlines_total{" + labels(e) + "} " + std::to_string(x.deadlines) + "\n";
           });
    family(f::has_deadlines, "m0_executor_threads_written_off_total", "counter",
           "Threads given up at a request deadline (a replacement took their place).",
           [&](std::size_t e, const totals::per_executor& x) {
               out += "m0_executor_threads_written_off_total{" + labels(e) + "} " + std::to_string(x.written_off) +
                      "\n";
           });
    family(f::has_deadlines, "m0_executor_processes_given_up_total", "counter",
           "Serving processes replaced (or, alone, exited) because of stuck application code on this executor.",
           [&](std::size_t e, const totals::per_executor& x) {
               out += "m0_executor_processes_given_up_total{" + labels(e) + "} " + std::to_string(x.given_up) + "\n";
           });
    family(f::has_queue_depth, "m0_executor_queue_depth", "gauge", "Jobs submitted and not started yet.",
           [&](std::size_t e, const totals::per_executor& x) {
               out += "m0_executor_queue_depth{" + labels(e) + "} " + std::to_string(x.queue_depth) + "\n";
           });
    family(f::has_jobs_done, "m0_executor_jobs_done_total", "counter", "Jobs run to their end.",
           [&](std::size_t e, const totals::per_executor& x) {
               out += "m0_executor_jobs_done_total{" + labels(e) + "} " + std::to_string(x.jobs_done) + "\n";
           });
    family(f::has_queue_wait, "m0_executor_queue_wait_seconds", "histogram",
           "Time from a job's submit to a thread starting it.", [&](std::size_t e, const totals::per_executor& x) {
               std::uint64_t cumulative = 0;
               const auto& bounds = queue_wait_histogram::bounds_us;
               for (std::size_t k = 0; k < bounds.size(); ++k) {
                   cumulative += x.wait[k];
                   out += "m0_executor_queue_wait_seconds_bucket{" + labels(e) + ",le=\"" + seconds_text(bounds[k]) +
                          "\"} " + std::to_string(cumulative) + "\n";
               }
               cumulative += x.wait.back();
               out += "m0_executor_queue_wait_seconds_bucket{" + labels(e) + ",le=\"+Inf\"} " +
                      std::to_string(cumulative) + "\n";
               out += "m0_executor_queue_wait_seconds_sum{" + labels(e) + "} " + nanoseconds_text(x.wait_sum_ns) + "\n";
               out += "m0_executor_queue_wait_seconds_count{" + labels(e) + "} " + std::to_string(cumulative) + "\n";
           });
    family(f::has_loop_lag, "m0_executor_loop_lag_seconds", "gauge",
           "How late an event loop got to work it was woken for (the largest of its loops and processes).",
           [&](std::size_t e, const totals::per_executor& x) {
               out += "m0_executor_loop_lag_seconds{" + labels(e) + "} " +
                      nanoseconds_text(static_cast<std::uint64_t>(std::max<std::int64_t>(0, x.loop_lag_ns))) + "\n";
           });
}

void metrics_table::prometheus_plugins(const totals& t, std::string& out) const {
    std::vector<bool> written(t.plugins.size(), false);
    for (std::size_t i = 0; i < t.plugins.size(); ++i) {
        if (written[i]) continue;
        const auto& first = t.plugins[i];
        out.append("# HELP ").append(first.name).append(" ").append(first.help).append("\n");
        out.append("# TYPE ").append(first.name).append(" ")
            .append(first.kind == plugin_series::counter ? "counter" : "gauge").append("\n");
        // Every series of the family, together.
        for (std::size_t j = i; j < t.plugins.size(); ++j) {
            const auto& s = t.plugins[j];
            if (written[j] || s.name != first.name) continue;
            written[j] = true;
            out += s.name;
            if (!s.labels.empty()) {
                out += "{";
                bool comma = false;
                for_each_label(s.labels, [&](std::string_view k, std::string_view v) {
                    if (comma) out += ",";
                    comma = true;
                    out.append(k).append("=\"").append(label_value(v)).append("\"");
                });
                out += "}";
            }
            out += " " + number_text(s.value) + "\n";
        }
    }
}

std::string metrics_table::status_json() const {
    const totals t = sum();
    const auto uptime =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count();
    std::string out = "{\"uptime_seconds\":" + std::to_string(uptime) +
                      ",\"worker_processes\":" + std::to_string(t.processes_alive) +
                      ",\"reactor_threads\":" + std::to_string(reactors_) +
                      ",\"connections_open\":" + std::to_string(t.open) +
                      ",\"requests_in_flight\":" + std::to_string(t.in_flight) +
                      ",\"executor_jobs\":" + std::to_string(t.executor_jobs) +
                      ",\"connections_accepted\":" + std::to_string(t.accepted) +
                      ",\"received_bytes\":" + std::to_string(t.bytes_in) +
                      ",\"sent_bytes\":" + std::to_string(t.bytes_out) +
                      ",\"proxy_headers_refused\":" + std::to_string(t.proxy_refused) +
                      ",\"forwarded_headers_ignored\":" + std::to_string(t.forwarded_ignored) + ",\"processes\":[";
    bool first = true;
    for (std::size_t p = 0; p < t.processes.size(); ++p) {
        if (p >= listed_ && !t.processes[p].pid && !t.processes[p].requests) continue;
        if (!first) out += ",";
        first = false;
        out += "{\"index\":" + std::to_string(p) + ",\"pid\":" +
               (t.processes[p].pid ? std::to_string(t.processes[p].pid) : std::string("null")) +
               ",\"requests\":" + std::to_string(t.processes[p].requests) + ",\"reactors\":[";
        for (unsigned r = 0; r < reactors_; ++r)
            out += std::string(r ? "," : "") + "{\"connections_open\":" + std::to_string(t.processes[p].reactor_open[r]) +
                   ",\"connections_accepted\":" + std::to_string(t.processes[p].reactor_accepted[r]) + "}";
        out += "]}";
    }
    out += "],\"mounts\":[";
    for (std::size_t m = 0; m < mounts_.size(); ++m) {
        const auto& c = t.mounts[m];
        if (m) out += ",";
        out += "{\"mount\":" + json_string(mounts_[m].prefix.empty() ? "/" : mounts_[m].prefix) +
               ",\"frontend\":" + json_string(mounts_[m].frontend) + ",\"requests\":{";
        for (std::size_t k = 0; k < status_classes; ++k) {
            if (k) out += ",";
            out.append("\"").append(class_names[k]).append("\":").append(std::to_string(c.by_class[k]));
        }
        out += "},\"deadlines\":" + std::to_string(c.deadlines) +
               ",\"duration_seconds\":{\"count\":" + std::to_string(c.count()) +
               ",\"sum\":" + seconds_text(c.latency_sum_us) + ",\"buckets\":[";
        std::uint64_t cumulative = 0;
        for (std::size_t k = 0; k < latency_bounds_us.size(); ++k) {
            cumulative += c.latency[k];
            if (k) out += ",";
            out.append("[").append(seconds_text(latency_bounds_us[k])).append(",").append(std::to_string(cumulative)).append("]");
        }
        out += "]}}";
    }
    out += "],\"executors\":";
    json_executors(t, out);
    out += ",\"plugins\":";
    json_plugins(t, out);
    out += "}\n";
    return out;
}

void metrics_table::json_executors(const totals& t, std::string& out) const {
    out += "[";
    for (std::size_t e = 0; e < t.executors.size(); ++e) {
        const auto& x = t.executors[e];
        using f = executor_slot::field;
        auto field = [&](std::uint32_t bit, std::uint64_t v) { return x.has(bit) ? std::to_string(v) : "null"; };
        if (e) out += ",";
        out += "{\"name\":" + json_string(executors_[e].name) + ",\"type\":" + json_string(executors_[e].type) +
               ",\"threads\":" + field(f::has_threads, x.threads) + ",\"busy\":" + field(f::has_busy, x.busy) +
               ",\"parked\":" + field(f::has_parked, x.parked) + ",\"blocked\":" + field(f::has_blocked, x.blocked) +
               ",\"queue_depth\":" + field(f::has_queue_depth, x.queue_depth) +
               ",\"jobs_done\":" + field(f::has_jobs_done, x.jobs_done) +
               ",\"written_off\":" + field(f::has_written_off, x.written_off_now) +
               ",\"deadlines\":" + field(f::has_deadlines, x.deadlines) +
               ",\"threads_written_off\":" + field(f::has_deadlines, x.written_off) +
               ",\"processes_given_up\":" + field(f::has_deadlines, x.given_up) + ",\"queue_wait_seconds\":";
        if (x.has(f::has_queue_wait)) {
            std::uint64_t cumulative = 0;
            std::string buckets;
            const auto& bounds = queue_wait_histogram::bounds_us;
            for (std::size_t k = 0; k < bounds.size(); ++k) {
                cumulative += x.wait[k];
                if (k) buckets += ",";
                buckets.append("[").append(seconds_text(bounds[k])).append(",").append(std::to_string(cumulative)).append("]");
            }
            cumulative += x.wait.back();
            out += "{\"count\":" + std::to_string(cumulative) + ",\"sum\":" + nanoseconds_text(x.wait_sum_ns) +
                   ",\"buckets\":[" + buckets + "]}";
        } else {
            out += "null";
        }
        out += ",\"loop_lag_seconds\":" +
               (x.has(f::has_loop_lag)
                    ? nanoseconds_text(static_cast<std::uint64_t>(std::max<std::int64_t>(0, x.loop_lag_ns)))
                    : std::string("null")) +
               "}";
    }
    out += "]";
}

void metrics_table::json_plugins(const totals& t, std::string& out) const {
    out += "[";
    for (std::size_t i = 0; i < t.plugins.size(); ++i) {
        const auto& s = t.plugins[i];
        if (i) out += ",";
        out += "{\"name\":" + json_string(s.name) + ",\"type\":" +
               (s.kind == plugin_series::counter ? "\"counter\"" : "\"gauge\"") + ",\"labels\":{";
        bool comma = false;
        for_each_label(s.labels, [&](std::string_view k, std::string_view v) {
            if (comma) out += ",";
            comma = true;
            out += json_string(k) + ":" + json_string(v);
        });
        out += "},\"value\":" + number_text(s.value) + "}";
    }
    out += "]";
}

}  // namespace m0::telemetry
