#pragma once
// Shared state of one pool: its threads, the words they park on, and the lanes
// (one per reactor). Owned jointly by the executor and every lane handle, so
// neither may outlive what it points at.
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <m0/executor.hpp>
#include <m0/rings/futex_word.hpp>
#include <m0/rings/wake_channel.hpp>

#include "demand_probe.hpp"
#include "entry_ring.hpp"
#include "pool_options.hpp"

namespace m0::pool {

class pool_core;

// The steady clock in nanoseconds: when a job was queued.
std::int64_t now_ns() noexcept;

// One pause of a spin loop: lets a sibling hyperthread run.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

// What travels on a job ring: the job and when it was submitted (for the
// queue-wait histogram).
struct queued_job {
    job* j = nullptr;
    std::int64_t queued_ns = 0;  // steady clock
};

// What travels on a completion ring: a reactor_task a job posted, or the
// job itself once run() returned.
struct completion_entry {
    enum kind_t : std::uint32_t { task = 0, done = 1 };
    void* ptr = nullptr;
    kind_t kind = task;
};

// One reactor's end of the pool. Fields are grouped by the thread that
// writes them; the reactor-only ones need no synchronisation.
struct lane_state {
    lane_state(pool_core& core, std::shared_ptr<reactor_waker> waker);

    pool_core& core;
    // Shared with the reactor: a pool thread may still wake through it after
    // the reactor saw its last completion and went away.
    const std::shared_ptr<reactor_waker> waker;
    std::unique_ptr<entry_ring<queued_job>> jobs;
    std::unique_ptr<entry_ring<completion_entry>> completions;

    // Reactor thread only.
    std::deque<queued_job> job_overflow;      // jobs that found the ring full, in order
    std::optional<completion_entry> stash;    // popped by prepare_to_wait's re-check
    std::uint64_t pushed = 0;                 // jobs put on the ring
    // Copies of pushed and of job_overflow's size for stats(): stored by the
    // reactor, read by anyone.
    std::atomic<std::uint64_t> pushed_seen{0};
    std::atomic<std::size_t> overflow_seen{0};
    std::uint64_t last_taken_seen = 0;
    std::chrono::steady_clock::time_point stall_since{};
    std::atomic<std::size_t> in_flight{0};    // written by the reactor only; atomic so other threads may read it
    // The adaptive reactor-side spin (pool_lane::spin_for_completion).
    struct spin_state {
        std::int64_t average_wait_ns = 0;  // moving average of the waits for a completion
        std::int64_t wait_start_ns = 0;    // the reactor ran out of work with jobs out (0: it has not)
        std::uint64_t missed = 0;          // spins that ended without a completion
    } spin;

    alignas(rings::cache_line) std::atomic<std::uint64_t> taken{0};  // jobs popped by pool threads

    // Completions that found the ring full. While overflow_mode is set every
    // completer appends here, so one job's posts never overtake each other.
    alignas(rings::cache_line) std::mutex overflow_mutex;
    std::vector<completion_entry> completion_overflow;
    std::atomic<bool> overflow_mode{false};

    // "I am about to wait": raised by the reactor before blocking.
    alignas(rings::cache_line) std::atomic<bool> reactor_waiting{false};
    std::atomic<bool> closed{false};  // the lane handle is gone: never wake it
};

class pool_core {
public:
    explicit pool_core(pool_options options);
    ~pool_core();

    const pool_options& options() const noexcept { return options_; }
    bool ring_mode() const noexcept { return options_.ring != ring_kind::none; }
    bool stopping() const noexcept { return stopping_.load(std::memory_order_seq_cst); }

    void add_thread_hooks(thread_hooks hooks);
    void start();
    // Returns the threads left running (detached) after `grace`.
    unsigned stop(std::chrono::milliseconds grace);
    std::shared_ptr<lane_state> add_lane(std::shared_ptr<reactor_waker> waker);

    // After a job was put on a lane's ring: wake a parked thread if any (one
    // per parked thread: parked_ already excludes wakes in flight), else grow.
    void on_job_pushed();
    // From any pool thread: completion (or partial result) for `lane`.
    void push_completion(lane_state& lane, completion_entry entry) noexcept;
    // Reactor age check: the lane's head has not moved for max_job_age.
    void on_stalled_lane();
    // From a reactor thread, once (its lane's first pass): with `colocate`,
    // the pool's threads may run on the cores this thread may run on, in
    // addition to those of the reactors that came before.
    void add_reactor_cpus() noexcept;

    // Threads, queue and queue wait, summed over the threads' own counters.
    executor_stats stats() const;
    // executor::write_off: the thread whose gettid is `tid`, inside a job,
    // stops counting (a replacement starts if the pool is below `threads`
    // or nobody is idle) and exits when its job returns.
    bool write_off(long tid) noexcept;

    unsigned live_threads() const noexcept { return live_.load(); }
    unsigned parked_threads() const noexcept { return parked_.load(); }
    unsigned idle_threads() const noexcept { return idle_.load(); }
    // growth: blocked — busy threads that ran little in the governor's last
    // window (0 while no job waits for a thread: then it does not measure).
    unsigned blocked_threads() const noexcept { return blocked_.load(std::memory_order_relaxed); }

private:
    enum slot_state : int { running = 0, parked = 1, woken = 2 };
    // What one thread counts about the jobs it took. Written by that thread
    // alone (a load and a store, no read-modify-write), read by stats().
    struct job_counters {
        std::atomic<std::uint64_t> taken{0};  // taken != done: inside a job
        std::atomic<std::uint64_t> done{0};
        std::array<std::atomic<std::uint64_t>, queue_wait_histogram::bounds_us.size() + 1> wait{};
        std::atomic<std::uint64_t> wait_sum_ns{0};
    };
    struct slot {
        alignas(rings::cache_line) job_counters counted;
        // running/parked/woken; a ring-mode thread parks on this word itself.
        rings::futex_word state{running};
        std::atomic<bool> exited{false};
        std::atomic<long> tid{0};              // gettid of its thread, while it runs
        std::atomic<bool> written_off{false};  // given up at a request deadline: exits after its job
        std::atomic<bool> in_job{false};       // inside run_job (write_off applies only then)
        bool batch = false;    // its own thread only: under SCHED_BATCH now (parked, with batch_sched)
        // growth: blocked. Under threads_mutex_: opened by the thread when it
        // starts, closed before it exits, read by the governor; the
        // generation tells a window's two readings of one thread from those
        // of a predecessor and its successor in the slot.
        demand_probe probe;
        std::uint64_t generation = 0;
        std::thread thread;
    };

    static void count_taken(job_counters& c, std::int64_t queued_ns) noexcept;
    static void count_done(job_counters& c) noexcept;
    void maybe_grow();
    // growth: blocked (pool_governor.cpp). A job waits and no thread is idle:
    // wakes the governor if it sleeps; one read-modify-write otherwise.
    void request_growth() noexcept;
    bool growth_pressure() const noexcept;
    std::uint64_t queued_jobs() const noexcept;
    void start_governor();
    void stop_governor();
    void governor_main();
    struct demand_reading {
        std::uint64_t generation = 0;
        std::uint64_t ns = 0;
        bool valid = false;
        bool in_job = false;
    };
    void read_demand(std::vector<demand_reading>& out);
    // Σ of the threads' demand between two readings `span_ns` apart (each
    // thread's in thread_demand_); `blocked`: threads in a job at both ends
    // that ran less than blocked_thread_demand.
    double measure_demand(const std::vector<demand_reading>& before, const std::vector<demand_reading>& after,
                          std::int64_t span_ns, unsigned& blocked);
    // What the threads measured low in the last window but on a CPU or
    // runnable now add to the demand (counted whole); `computing`: how many
    // of them were counted blocked.
    double runnable_shortfall(const std::vector<demand_reading>& after, unsigned& computing);
    // Opens (on its own thread) or closes the calling thread's probe.
    void open_probe(slot& s);
    void close_probe_locked(slot& s) noexcept;
    void spawn_locked();
    bool wake_one() noexcept;
    void wake_all() noexcept;
    void thread_main(unsigned index);
    // Runs the job and counts it done in `counted` (the thread's own).
    void run_job(lane_state& lane, job* j, job_counters& counted) noexcept;
    bool take_job(lane_state*& lane, queued_job& j) noexcept;
    // How a thread's wait for work ended: with a job in hand, told to stop,
    // or gone after an idle timeout (its slot already handed back: it must
    // not touch it again).
    enum class idle_end { job, stop, left };
    idle_end idle_ring(slot& s, lane_state*& lane, queued_job& j);
    idle_end idle_none(slot& s, lane_state*& lane, queued_job& j);
    bool unpark(slot& s) noexcept;
    // After an idle timeout: a thread beyond `threads` leaves, unless a job
    // came in meanwhile (then it takes it: idle_end::job).
    std::optional<idle_end> leave_if_surplus(slot& s, lane_state*& lane, queued_job& j);
    void run_start_hooks();
    void run_stop_hooks();
    // A written-off thread back from its job: gives up what it kept (the
    // GIL), runs its stop hooks and hands its slot back.
    void retire_written_off(slot& s);
    void window_pause() const noexcept;
    // With `colocate`: moves the calling pool thread onto the reactors'
    // cores if they changed since `applied` (its own copy of the generation).
    void follow_reactor_cpus(unsigned& applied) noexcept;
    friend struct lane_port;

    const pool_options options_;
    std::vector<thread_hooks> hooks_;
    std::vector<std::unique_ptr<slot>> slots_;  // max_threads, fixed after construction

    alignas(rings::cache_line) std::atomic<unsigned> parked_{0};  // parked and not yet woken
    alignas(rings::cache_line) std::atomic<unsigned> idle_{0};    // live, not running a job
    std::atomic<unsigned> live_{0};
    std::atomic<unsigned> written_off_{0};  // written off and not returned yet (not in live_)
    std::atomic<bool> stopping_{false};
    std::atomic<unsigned> wake_cursor_{0};

    // growth: blocked. The governor sleeps on governor_cv_ while nothing
    // presses (governor_asleep_), and samples a window at a time while jobs
    // wait with no idle thread. parks_ counts parks, so a window in which
    // a thread went idle does not count as pressure.
    std::thread governor_;
    std::mutex governor_mutex_;
    std::condition_variable governor_cv_;
    std::atomic<bool> governor_asleep_{false};
    std::atomic<unsigned> blocked_{0};
    std::atomic<std::uint64_t> parks_{0};
    std::vector<double> thread_demand_;  // the governor's: each slot's demand in its last window (-1: none)

    std::mutex threads_mutex_;  // spawning, joining, lane registration
    bool started_ = false;
    bool stopped_ = false;
    unsigned abandoned_threads_ = 0;
    // Signalled by each thread as it exits, so stop() can wait with a bound.
    std::mutex exit_mutex_;
    std::condition_variable exited_;

    std::array<std::atomic<lane_state*>, max_lanes> lanes_{};
    std::atomic<std::size_t> lane_count_{0};
    std::vector<std::shared_ptr<lane_state>> lane_owners_;

    rings::wake_channel job_semaphore_{true};  // `ring: none`: one signal per job

    // The cores of the thread that made the pool: every pool thread starts on
    // them, whichever thread spawned it (a pinned reactor grows the pool,
    // and a new thread would inherit its one core).
    cpu_set_t start_cpus_{};
    bool have_start_cpus_ = false;
    // `colocate`: the union of the reactors' cores, and how many reactors
    // have added theirs (a pool thread re-reads the set when it changes).
    std::mutex colocation_mutex_;
    cpu_set_t colocation_cpus_{};
    std::atomic<unsigned> colocation_generation_{0};
};

}  // namespace m0::pool
