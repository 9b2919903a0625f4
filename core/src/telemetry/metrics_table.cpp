#include "telemetry/metrics_table.hpp"

#include <signal.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>

namespace m0::telemetry {

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

}  // namespace

struct metrics_table::totals {
    std::uint64_t open = 0, in_flight = 0, executor_jobs = 0, accepted = 0, bytes_in = 0, bytes_out = 0;
    std::uint64_t proxy_refused = 0, forwarded_ignored = 0;
    unsigned processes_alive = 0;
    struct process {
        int pid = 0;  // 0: not running
        std::uint64_t requests = 0;
    };
    std::vector<process> processes;
    struct per_mount {
        std::array<std::uint64_t, status_classes> by_class{};
        std::array<std::uint64_t, latency_bounds_us.size() + 1> latency{};
        std::uint64_t latency_sum_us = 0;
        std::uint64_t count() const {
            std::uint64_t n = 0;
            for (auto v : latency) n += v;
            return n;
        }
    };
    std::vector<per_mount> mounts;
};

metrics_table::metrics_table(unsigned processes, unsigned reactors, std::vector<mount_label> mounts, unsigned spare)
    : processes_(processes + spare), listed_(processes), reactors_(reactors), mounts_(std::move(mounts)),
      started_(std::chrono::steady_clock::now()) {
    if (mounts_.empty()) throw std::invalid_argument("metrics_table: no mount");
    stride_ = round_up(sizeof(reactor_slot)) + mounts_.size() * round_up(sizeof(mount_counters));
    const std::size_t pid_bytes = round_up(sizeof(std::atomic<int>) * processes_);
    size_ = pid_bytes + stride_ * processes_ * reactors_;
    // Shared and anonymous: inherited by every forked serving process.
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("cannot map the metrics table: ") + std::strerror(errno));
    base_ = static_cast<char*>(p);
    pids_ = reinterpret_cast<std::atomic<int>*>(base_);
    for (unsigned i = 0; i < processes_; ++i) new (&pids_[i]) std::atomic<int>(0);
    char* slots = base_ + pid_bytes;
    for (unsigned i = 0; i < processes_ * reactors_; ++i) {
        char* s = slots + i * stride_;
        new (s) reactor_slot();
        for (std::size_t m = 0; m < mounts_.size(); ++m)
            new (s + round_up(sizeof(reactor_slot)) + m * round_up(sizeof(mount_counters))) mount_counters();
    }
    base_ = slots;  // pids_ keeps the head of the mapping
}

metrics_table::~metrics_table() { ::munmap(reinterpret_cast<char*>(pids_), size_); }

reactor_slot& metrics_table::slot(unsigned process, unsigned reactor) const noexcept {
    return *reinterpret_cast<reactor_slot*>(base_ + (process * reactors_ + reactor) * stride_);
}

mount_counters& metrics_table::mount(reactor_slot& s, std::size_t index) const noexcept {
    return *reinterpret_cast<mount_counters*>(reinterpret_cast<char*>(&s) + round_up(sizeof(reactor_slot)) +
                                              index * round_up(sizeof(mount_counters)));
}

std::size_t metrics_table::mount_index(std::string_view prefix) const noexcept {
    for (std::size_t i = 0; i < mounts_.size(); ++i)
        if (mounts_[i].prefix == prefix) return i;
    return 0;
}

void metrics_table::process_started(unsigned process, int pid) noexcept {
    for (unsigned r = 0; r < reactors_; ++r) {
        auto& s = slot(process, r).stats;
        s.live_connections.store(0, std::memory_order_relaxed);
        s.in_flight.store(0, std::memory_order_relaxed);
        s.executor_jobs.store(0, std::memory_order_relaxed);
    }
    pids_[process].store(pid, std::memory_order_release);
}

void metrics_table::process_ended(unsigned process) noexcept {
    pids_[process].store(0, std::memory_order_release);
    for (unsigned r = 0; r < reactors_; ++r) {
        auto& s = slot(process, r).stats;
        s.live_connections.store(0, std::memory_order_relaxed);
        s.in_flight.store(0, std::memory_order_relaxed);
        s.executor_jobs.store(0, std::memory_order_relaxed);
    }
}

metrics_table::totals metrics_table::sum() const {
    totals t;
    t.mounts.resize(mounts_.size());
    for (unsigned p = 0; p < processes_; ++p) {
        // A process killed outright leaves its gauges behind: they count
        // only while its pid is alive (the supervisor reaps it at once).
        const int pid = pids_[p].load(std::memory_order_acquire);
        const bool alive = pid != 0 && ::kill(pid, 0) == 0;
        if (alive) ++t.processes_alive;
        auto& proc = t.processes.emplace_back();
        proc.pid = alive ? pid : 0;
        for (unsigned r = 0; r < reactors_; ++r) {
            auto& s = slot(p, r);
            proc.requests += load(s.stats.requests);
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
            for (std::size_t m = 0; m < mounts_.size(); ++m) {
                auto& c = mount(s, m);
                auto& into = t.mounts[m];
                for (std::size_t k = 0; k < status_classes; ++k) into.by_class[k] += load(c.by_class[k]);
                for (std::size_t k = 0; k < into.latency.size(); ++k) into.latency[k] += load(c.latency[k]);
                into.latency_sum_us += load(c.latency_sum_us);
            }
        }
    }
    return t;
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
    single("m0_worker_processes", "gauge", "Serving processes running now.", t.processes_alive);
    single("m0_reactor_threads", "gauge", "Reactor threads per serving process.", reactors_);
    return out;
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
               ",\"requests\":" + std::to_string(t.processes[p].requests) + "}";
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
        out += "},\"duration_seconds\":{\"count\":" + std::to_string(c.count()) +
               ",\"sum\":" + seconds_text(c.latency_sum_us) + ",\"buckets\":[";
        std::uint64_t cumulative = 0;
        for (std::size_t k = 0; k < latency_bounds_us.size(); ++k) {
            cumulative += c.latency[k];
            if (k) out += ",";
            out.append("[").append(seconds_text(latency_bounds_us[k])).append(",").append(std::to_string(cumulative)).append("]");
        }
        out += "]}}";
    }
    out += "]}\n";
    return out;
}

}  // namespace m0::telemetry
