#pragma once
// The counters behind /metrics and /status.json: one slot per reactor of
// every serving process, in memory shared by the processes of a prefork
// deployment (mapped before the first fork), so whoever serves a scrape sums
// them without asking anyone. Each slot is written by its reactor thread
// alone, with relaxed atomic adds: no lock on the request path.
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/reactor.hpp>

namespace m0::telemetry {

// Upper bounds of the latency histogram buckets, in microseconds (+Inf last).
inline constexpr std::array<std::uint64_t, 13> latency_bounds_us = {
    1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 2'500'000, 5'000'000,
    10'000'000};

// TLS handshake failures are counted by reason: tls::handshake_failure's
// values, `none` included so the index is the value.
inline constexpr std::size_t tls_failure_reasons = 10;

// Status classes: 0 no response (the connection ended first), 1..5 for 1xx..5xx.
inline constexpr std::size_t status_classes = 6;

struct mount_counters {
    std::array<std::atomic<std::uint64_t>, status_classes> by_class{};
    std::array<std::atomic<std::uint64_t>, latency_bounds_us.size() + 1> latency{};  // per bucket, not cumulative
    std::atomic<std::uint64_t> latency_sum_us{0};
    std::atomic<std::uint64_t> deadlines{0};  // answered for the app at its request deadline (outcome timeout)
};

struct reactor_slot {
    reactor_stats stats;  // the scheduler's own counters of this reactor live here
    std::atomic<std::uint64_t> bytes_in{0};
    std::atomic<std::uint64_t> bytes_out{0};
    // Connections closed for a missing or malformed PROXY protocol header,
    // and requests whose forwarding headers from a trusted peer were ignored
    // as malformed.
    std::atomic<std::uint64_t> proxy_headers_refused{0};
    std::atomic<std::uint64_t> forwarded_headers_ignored{0};
    // TLS handshakes completed (of them resumed from a ticket or session id)
    // and failed, by reason.
    std::atomic<std::uint64_t> tls_handshakes{0};
    std::atomic<std::uint64_t> tls_resumed{0};
    std::array<std::atomic<std::uint64_t>, tls_failure_reasons> tls_failures{};
    // HTTP/2: connections, streams opened, and connections ended with
    // GOAWAY ENHANCE_YOUR_CALM (a flood or too many resets).
    std::atomic<std::uint64_t> http2_connections{0};
    std::atomic<std::uint64_t> http2_streams{0};
    std::atomic<std::uint64_t> http2_calm{0};
};

// One executor of one serving process, as its metrics sampler last saw it
// (executor::stats()). Gauges are stored as sampled; counters are added to
// (by what grew since the last sample), so a replaced process carries on
// from its predecessor's count.
struct executor_slot {
    enum field : std::uint32_t {
        has_threads = 1, has_busy = 2, has_parked = 4, has_queue_depth = 8, has_jobs_done = 16,
        has_queue_wait = 32, has_loop_lag = 64, has_deadlines = 128, has_written_off = 256, has_blocked = 512,
    };
    std::atomic<std::uint32_t> known{0};  // which fields the executor reports
    std::atomic<std::uint64_t> threads{0}, busy{0}, parked{0}, queue_depth{0};
    std::atomic<std::uint64_t> blocked{0};  // of the busy ones
    std::atomic<std::int64_t> loop_lag_ns{0};
    std::atomic<std::uint64_t> jobs_done{0};
    std::array<std::atomic<std::uint64_t>, queue_wait_histogram::bounds_us.size() + 1> wait{};
    std::atomic<std::uint64_t> wait_sum_ns{0};
    // Request deadlines of the calls this executor ran (counters), and the
    // threads it wrote off that have not returned yet (a gauge).
    std::atomic<std::uint64_t> deadlines{0}, threads_written_off{0}, processes_given_up{0};
    std::atomic<std::uint64_t> written_off_now{0};
};

// One series a plugin reports (m0/metrics.hpp), in the table of its serving
// process. The text fields are written once, before the entry is published
// by its table's count (release), and never change; only the value does.
struct plugin_series {
    static constexpr std::size_t name_size = 96, labels_size = 192, help_size = 192;
    enum kind_t : std::uint8_t { counter = 0, gauge = 1 };
    char name[name_size];
    // name=value pairs, each ended by '\x1f' (a byte no label may hold).
    char labels[labels_size];
    char help[help_size];
    kind_t kind;
    std::atomic<double> value{0};
};

// The table lives in memory shared between processes: only lock-free
// atomics work there.
static_assert(std::atomic<double>::is_always_lock_free && std::atomic<std::uint64_t>::is_always_lock_free);

struct plugin_series_table {
    static constexpr std::size_t capacity = 128;
    std::atomic<std::uint32_t> count{0};  // entries published; the sampler is the only writer
    plugin_series entries[capacity];
};

// A mount as the metrics label it.
struct mount_label {
    std::string prefix;    // "" for "/"
    std::string frontend;  // its frontend type: "http", "wsgi", "asgi", ...
};

// An executor as the metrics label it.
struct executor_label {
    std::string name;  // from `executors:`, "default", or the prefix of the mount it was built for
    std::string type;  // "inline", "pool", "asyncio", ...
};

class M0_INTERNAL_API metrics_table {
public:
    // `spare` more process slots serve the processes that overlap the ones
    // they replace (a reload, server.max_requests); /status.json lists them
    // only once used.
    metrics_table(unsigned processes, unsigned reactors, std::vector<mount_label> mounts,
                  std::vector<executor_label> executors = {}, unsigned spare = 0);
    ~metrics_table();
    metrics_table(const metrics_table&) = delete;
    metrics_table& operator=(const metrics_table&) = delete;

    reactor_slot& slot(unsigned process, unsigned reactor) const noexcept;
    unsigned process_count() const noexcept { return processes_; }
    mount_counters& mount(reactor_slot& s, std::size_t index) const noexcept;
    const std::vector<mount_label>& mounts() const noexcept { return mounts_; }
    const std::vector<executor_label>& executors() const noexcept { return executors_; }
    executor_slot& executor(unsigned process, std::size_t index) const noexcept;
    plugin_series_table& plugin_series_of(unsigned process) const noexcept;
    // The index of the mount with this prefix (a request's script_name).
    std::size_t mount_index(std::string_view prefix) const noexcept;

    // A serving process starts in slot `process`: its predecessor's open
    // connections are gone, its counters carry on (Prometheus counters never go down).
    void process_started(unsigned process, int pid) noexcept;
    void process_ended(unsigned process) noexcept;
    // A serving process began its drain (a stop, not a crash).
    void process_draining(unsigned process) noexcept;
    // The deployment is stopping: some process drains and none that is
    // alive serves on (one process of several replaced is not a stop).
    bool deployment_draining() const noexcept;

    // The sums, in the Prometheus text format (version 0.0.4), and as JSON.
    std::string prometheus() const;
    std::string status_json() const;

private:
    struct totals;
    totals sum() const;
    void clear_gauges(unsigned process) noexcept;
    void sum_executors(unsigned process, bool alive, totals& t) const;
    void sum_plugin_series(unsigned process, bool alive, totals& t) const;
    void prometheus_reactors(const totals& t, std::string& out) const;
    void prometheus_executors(const totals& t, std::string& out) const;
    void prometheus_plugins(const totals& t, std::string& out) const;
    void json_executors(const totals& t, std::string& out) const;
    void json_plugins(const totals& t, std::string& out) const;
    struct process_head {
        std::atomic<int> pid{0};  // 0 while none serves
        std::atomic<bool> draining{false};
    };

    unsigned processes_;
    unsigned listed_;  // slots /status.json lists even when unused
    unsigned reactors_;
    std::vector<mount_label> mounts_;
    std::vector<executor_label> executors_;
    std::size_t stride_ = 0;  // bytes per reactor slot with its mounts
    std::size_t size_ = 0;
    char* mapping_ = nullptr;
    char* base_ = nullptr;                 // the reactor slots
    process_head* heads_ = nullptr;        // per process
    executor_slot* executor_slots_ = nullptr;     // per process, per executor
    plugin_series_table* plugin_tables_ = nullptr;  // per process
    std::chrono::steady_clock::time_point started_;
};

}  // namespace m0::telemetry
