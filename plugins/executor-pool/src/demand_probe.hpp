#pragma once
// A pool thread's demand on the scheduler, readable by another thread: how
// long it has been on a CPU or waiting on a run queue, in nanoseconds.
//
// Why this tells blocked from computing without knowing Python: a thread
// waiting for I/O, a sleep, a lock or the GIL sleeps in the kernel (neither
// on a CPU nor runnable), while a thread that computes with the GIL is on a
// CPU or waiting for one. Summed over the pool's threads, the demand per
// second of wall time is how much of a core the application's Python is
// using (pool_governor.cpp).
#include <time.h>

#include <cstdint>
#include <optional>

namespace m0::pool {

class demand_probe {
public:
    // Where the numbers come from: /proc/thread-self/schedstat (time on a
    // CPU plus time runnable on a run queue), or, where the kernel has no
    // schedstat, the thread's CPU clock (time on a CPU only: a thread that
    // waits for a busy core then looks blocked).
    enum class source { none, schedstat, cpu_clock };

    demand_probe() = default;
    demand_probe(const demand_probe&) = delete;
    demand_probe& operator=(const demand_probe&) = delete;
    ~demand_probe() { close(); }

    // On the thread to watch, once: the file is opened here and kept, so a
    // read is one pread(2) of a few bytes and no open. `prefer`: cpu_clock
    // skips schedstat (what a kernel without it gets; for tests).
    void open_for_this_thread(source prefer = source::schedstat) noexcept;
    void close() noexcept;
    source kind() const noexcept { return kind_; }

    // From any thread while open (the owner of the probe serialises this with
    // close()). nullopt: not open, or the read failed.
    std::optional<std::uint64_t> demand_ns() const noexcept;

    // From any thread while open: the thread is running or waiting for a
    // CPU now (state R in /proc/thread-self/stat). The kernel adds a
    // running thread's time at its next tick (up to 4 ms late at HZ=250)
    // and a runnable thread's wait only once it gets a CPU, so over a short
    // window a thread that computes on a busy machine can show little
    // demand; its state does not lag. False when unknown.
    bool runnable() const noexcept;

    // Parses schedstat's "<run ns> <wait ns> <timeslices>": run + wait.
    static std::optional<std::uint64_t> parse_schedstat(const char* text, std::size_t size) noexcept;
    // The state letter of /proc/<pid>/task/<tid>/stat ("1234 (name) R ..."),
    // or 0.
    static char parse_stat_state(const char* text, std::size_t size) noexcept;

private:
    source kind_ = source::none;
    int fd_ = -1;
    int stat_fd_ = -1;
    clockid_t clock_{};
};

}  // namespace m0::pool
