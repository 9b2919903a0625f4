#pragma once
// Shared state of the asyncio executor: its loop threads and the lanes (one
// per reactor). Owned jointly by the executor, every lane handle and every
// loop thread, so none may outlive what it points at.
#include <Python.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <m0/executor.hpp>
#include <m0/python/ref.hpp>
#include <m0/rings/wake_channel.hpp>

#include "asyncio_options.hpp"
#include "spill_ring.hpp"

namespace m0::asyncio {

inline constexpr std::size_t max_lanes = 256;

// What travels on the rings: towards a loop a job or a job_task; back to the
// reactor a reactor_task or a finished job.
struct entry {
    enum kind_t : std::uint32_t { job_entry = 0, task_entry = 1 };
    void* ptr = nullptr;
    kind_t kind = job_entry;
    std::int64_t queued_ns = 0;  // a job on its way to the loop: when it was submitted
};

// The steady clock in nanoseconds.
std::int64_t now_ns() noexcept;

struct loop_state;

// One reactor's end. Fields are grouped by the thread that writes them.
struct lane_state {
    lane_state(loop_state& l, std::shared_ptr<reactor_waker> w, std::size_t capacity)
        : loop(l), waker(std::move(w)), inbound(capacity), completions(capacity) {}

    loop_state& loop;
    const std::shared_ptr<reactor_waker> waker;
    spill_ring<entry> inbound;      // reactor → loop
    spill_ring<entry> completions;  // loop (or any finishing thread) → reactor

    // Stats: written by one thread each, read by anyone.
    std::atomic<std::uint64_t> submitted{0};  // reactor
    std::atomic<std::uint64_t> started{0};    // loop: jobs whose run() was called
    std::atomic<std::uint64_t> completed{0};  // reactor
    std::atomic<std::size_t> in_flight{0};    // reactor

    alignas(rings::cache_line) std::atomic<bool> reactor_waiting{false};
    std::atomic<bool> closed{false};  // the lane handle is gone: never wake it
    // On the owed list of its loop's drain pass (owed_wakes): read and
    // written by that loop's thread only.
    bool wake_owed = false;
};

// One loop thread: its event loop, the eventfd it watches, its lanes.
struct loop_state {
    class asyncio_core* owner = nullptr;
    unsigned index = 0;
    rings::wake_channel wake;
    // Set by whoever writes the eventfd, cleared by the loop before it
    // drains: a push finding it set leaves the wake to the one in flight.
    alignas(rings::cache_line) std::atomic<bool> wake_pending{false};
    // Loop lag: from the wake of an idle loop to its drain callback (how
    // long the loop took to get to reactors' work). Stats only: relaxed.
    std::atomic<std::int64_t> wake_at_ns{0};      // set by the waking pusher
    std::atomic<std::int64_t> lag_last_ns{0};
    std::atomic<std::int64_t> lag_at_ns{0};       // when lag_last_ns was measured
    std::atomic<std::int64_t> lag_max_ns{0};
    std::atomic<std::uint64_t> wakes{0};          // eventfd writes
    // Queue wait of the jobs this loop started (submit to run()); the loop
    // thread is the only writer.
    std::array<std::atomic<std::uint64_t>, queue_wait_histogram::bounds_us.size() + 1> wait{};
    std::atomic<std::uint64_t> wait_sum_ns{0};
    std::array<std::atomic<lane_state*>, max_lanes> lanes{};
    std::atomic<std::size_t> lane_count{0};
    // The lanes a drain pass completed work for and has not yet woken
    // (asyncio_core::drain): the loop thread's only.
    std::vector<lane_state*> owed_wakes;
    std::thread thread;
    python::py_ref loop;                 // the event loop object; its thread (GIL) only
    std::atomic<PyObject*> loop_seen{nullptr};  // the same, published for loop_service
    bool ready = false;                  // under core::mutex_
    std::string start_error;             // under core::mutex_
    std::atomic<bool> exited{false};
};

class asyncio_core : public std::enable_shared_from_this<asyncio_core> {
public:
    explicit asyncio_core(asyncio_options options);
    ~asyncio_core();

    const asyncio_options& options() const noexcept { return options_; }
    bool stopping() const noexcept { return stopping_.load(); }
    unsigned loop_count() const noexcept { return options_.loops; }
    PyObject* loop_object(unsigned index) const noexcept;
    // Loops, queue, queue wait and loop lag: plain reads, any thread.
    executor_stats stats() const;

    void add_thread_hooks(thread_hooks hooks);
    // Starts the loop threads and waits until each runs its loop; throws with
    // the reason if one cannot (uvloop missing, say).
    void start();
    unsigned stop(std::chrono::milliseconds grace);
    std::shared_ptr<lane_state> add_lane(std::shared_ptr<reactor_waker> waker);

    // Reactor: after pushing on lane.inbound.
    static void wake_loop(loop_state& loop) noexcept;
    // Any thread: a completion (or partial result) for `lane`; push, then
    // read the reactor's announcement. On a loop thread inside its drain
    // pass, the read (and the wake) is owed to the end of the batch.
    static void push_completion(lane_state& lane, entry e);

    // The loop's reader callback (GIL held, on the loop thread).
    void drain(loop_state& loop) noexcept;

private:
    void loop_main(loop_state& loop);
    void run_loop(loop_state& loop);

    const asyncio_options options_;
    std::vector<thread_hooks> hooks_;
    std::vector<std::unique_ptr<loop_state>> loops_;
    python::py_ref glue_;  // the Python side (a dict of helper functions)

    std::mutex mutex_;  // lane registration, start/stop
    std::condition_variable changed_;
    std::size_t next_lane_ = 0;
    std::vector<std::shared_ptr<lane_state>> lane_owners_;
    bool started_ = false;
    bool stopped_ = false;
    unsigned abandoned_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<double> cancel_timeout_s_{5.0};
};

}  // namespace m0::asyncio
