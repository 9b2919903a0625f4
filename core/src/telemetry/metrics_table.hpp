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
#include <m0/reactor.hpp>

namespace m0::telemetry {

// Upper bounds of the latency histogram buckets, in microseconds (+Inf last).
inline constexpr std::array<std::uint64_t, 13> latency_bounds_us = {
    1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 2'500'000, 5'000'000,
    10'000'000};

// Status classes: 0 no response (the connection ended first), 1..5 for 1xx..5xx.
inline constexpr std::size_t status_classes = 6;

struct mount_counters {
    std::array<std::atomic<std::uint64_t>, status_classes> by_class{};
    std::array<std::atomic<std::uint64_t>, latency_bounds_us.size() + 1> latency{};  // per bucket, not cumulative
    std::atomic<std::uint64_t> latency_sum_us{0};
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
};

// A mount as the metrics label it.
struct mount_label {
    std::string prefix;    // "" for "/"
    std::string frontend;  // its frontend type: "http", "wsgi", "asgi", ...
};

class M0_INTERNAL_API metrics_table {
public:
    // `spare` more process slots serve the processes that overlap the ones
    // they replace (a reload, server.max_requests); /status.json lists them
    // only once used.
    metrics_table(unsigned processes, unsigned reactors, std::vector<mount_label> mounts, unsigned spare = 0);
    ~metrics_table();
    metrics_table(const metrics_table&) = delete;
    metrics_table& operator=(const metrics_table&) = delete;

    reactor_slot& slot(unsigned process, unsigned reactor) const noexcept;
    unsigned process_count() const noexcept { return processes_; }
    mount_counters& mount(reactor_slot& s, std::size_t index) const noexcept;
    const std::vector<mount_label>& mounts() const noexcept { return mounts_; }
    // The index of the mount with this prefix (a request's script_name).
    std::size_t mount_index(std::string_view prefix) const noexcept;

    // A serving process starts in slot `process`: its predecessor's open
    // connections are gone, its counters carry on (Prometheus counters never go down).
    void process_started(unsigned process, int pid) noexcept;
    void process_ended(unsigned process) noexcept;

    // The sums, in the Prometheus text format (version 0.0.4), and as JSON.
    std::string prometheus() const;
    std::string status_json() const;

private:
    struct totals;
    totals sum() const;

    unsigned processes_;
    unsigned listed_;  // slots /status.json lists even when unused
    unsigned reactors_;
    std::vector<mount_label> mounts_;
    std::size_t stride_ = 0;  // bytes per reactor slot with its mounts
    std::size_t size_ = 0;
    char* base_ = nullptr;
    std::atomic<int>* pids_ = nullptr;  // per process; 0 while none serves
    std::chrono::steady_clock::time_point started_;
};

}  // namespace m0::telemetry
