#pragma once
// Executor seam: runs jobs off the reactor thread and hands their completions
// back to the reactor that submitted them.
//
// Threading contract:
//  * executor_lane::submit, poll_completions, prepare_to_wait,
//    finished_waiting, on_reactor_pass and post_to_job are called only by the
//    lane's own reactor thread.
//  * job::run runs on an executor thread (or, for `inline`, on the reactor).
//  * A job is in flight from submit until it has finished: when run()
//    returns, or — for a job whose finishes_later() is true — when it calls
//    completion_port::finish(), once, from any thread.
//  * job::complete and every reactor_task posted through a completion_port
//    run on the submitting reactor thread, in the order they were posted;
//    complete() runs after the job finished and after every task it posted.
//  * Lanes and the reactor_waker given to make_lane outlive every executor
//    thread that may still touch them: an executor thread can be pushing a
//    completion when the reactor sees its last job complete and exits.
// Swapping the executor must not change a line of frontend code.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include <m0/api.hpp>

namespace m0 {

// Work that must run on the reactor that submitted a job (a streamed chunk,
// a hold registration...). Posted from an executor thread.
class reactor_task {
public:
    virtual ~reactor_task() = default;
    virtual void run_on_reactor() noexcept = 0;
};

// Work the reactor sends into a running job (a request body chunk, "client
// gone", "room to write again"), run on the executor thread that runs the
// job, so the reactor never has to take the job's locks (or a GIL).
class job_task {
public:
    virtual ~job_task() = default;
    virtual void run_in_job() noexcept = 0;
};

// Given to a running job: sends reactor_tasks back to the submitting reactor
// and, for a job that finishes later, says when it has finished.
class completion_port {
public:
    virtual ~completion_port() = default;
    // Any thread, until the job has finished.
    virtual void post(std::unique_ptr<reactor_task> task) = 0;
    // Only for a job whose finishes_later() is true: the job is done; its
    // complete() will run on the reactor after every task posted before this.
    // Exactly once, from any thread; the port must not be used afterwards.
    virtual void finish() noexcept = 0;

    // Convenience: post a callable.
    template <class F>
    void post_fn(F&& fn) {
        struct fn_task final : reactor_task {
            explicit fn_task(F&& f) : f_(std::forward<F>(f)) {}
            void run_on_reactor() noexcept override { f_(); }
            std::decay_t<F> f_;
        };
        post(std::make_unique<fn_task>(std::forward<F>(fn)));
    }
};

class job {
public:
    virtual ~job() = default;
    // Executor thread. May post any number of reactor_tasks (partial
    // results). For a job that finishes later, `port` stays valid until the
    // job calls port.finish().
    virtual void run(completion_port& port) noexcept = 0;
    // Submitting reactor thread, after the job finished and every task it
    // posted has run. cancelled == true: the executor shut down before run()
    // was called. The executor deletes the job right after this returns.
    virtual void complete(bool cancelled) noexcept = 0;
    // True: returning from run() does not finish the job (it started work that
    // ends later, a coroutine say); it calls port.finish() itself. Read once,
    // before run().
    virtual bool finishes_later() const noexcept { return false; }
};

// Makes a reactor's blocking wait return; callable from any thread, also
// after the reactor stopped (then it does nothing harmful).
class reactor_waker {
public:
    virtual ~reactor_waker() = default;
    virtual void wake() noexcept = 0;
};

// The per-reactor end of an executor.
class executor_lane {
public:
    virtual ~executor_lane() = default;
    // Never drops a job: if the executor is momentarily full the lane keeps
    // it (see the executor's README for its backpressure).
    virtual void submit(std::unique_ptr<job> j) = 0;
    // Runs completions that have arrived; returns how many ran.
    virtual std::size_t poll_completions() = 0;
    // The reactor is about to block. Announces it, then re-checks; returns
    // false when completions are pending, in which case the reactor must not
    // block (and must not call finished_waiting).
    virtual bool prepare_to_wait() = 0;
    virtual void finished_waiting() = 0;
    // Once per reactor loop pass (e.g. the pool's job-age check).
    virtual void on_reactor_pass() {}
    // Jobs submitted whose complete() has not run yet.
    virtual std::size_t jobs_in_flight() const = 0;
    // The reactor → job path: runs `task` on the executor thread(s) that run
    // this lane's jobs, in the order posted. Returns false (and drops the
    // task) when this executor does not offer the path — a blocking pool,
    // whose job holds its thread until it returns, has nothing to run it on;
    // such a job waits on state of its own instead.
    virtual bool post_to_job(std::unique_ptr<job_task> task) { return false; }

    // Convenience: post_to_job with a callable.
    template <class F>
    bool post_fn_to_job(F&& fn) {
        struct fn_task final : job_task {
            explicit fn_task(F&& f) : f_(std::forward<F>(f)) {}
            void run_in_job() noexcept override { f_(); }
            std::decay_t<F> f_;
        };
        return post_to_job(std::make_unique<fn_task>(std::forward<F>(fn)));
    }
};

// Run on every thread that will run jobs: on_start once before its first job,
// on_stop once when it exits. Lets a frontend create per-thread state (a
// Python thread state) once per thread instead of once per job.
//
// on_idle: run on the thread each time it finds no job to take, before it
// waits for one (spins, parks or exits), and never between two jobs taken
// back to back. A frontend may keep something a job takes (the GIL) from
// one job to the next and give it up here. An executor whose threads never
// wait between jobs (inline: they are reactors) does not call it, and a
// frontend must then not keep anything: it learns that on_idle is called by
// its first call.
struct thread_hooks {
    std::function<void()> on_start{};
    std::function<void()> on_stop{};
    std::function<void()> on_idle{};
};

// Time from submit to a thread starting the job, as a histogram: per bucket
// (not cumulative), the last bucket above the last bound.
struct queue_wait_histogram {
    static constexpr std::array<std::uint64_t, 16> bounds_us = {
        10, 50, 100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 1'000'000,
        2'500'000, 10'000'000};
    std::array<std::uint64_t, bounds_us.size() + 1> buckets{};
    std::uint64_t sum_ns = 0;

    // The bucket of a wait of `ns` nanoseconds.
    static std::size_t bucket_of(std::uint64_t ns) noexcept {
        std::size_t i = 0;
        while (i < bounds_us.size() && ns > bounds_us[i] * 1000) ++i;
        return i;
    }
};

// What an executor knows about itself, for /metrics and /status.json. Every
// field is optional: an executor reports what it can (nullopt: unknown).
// Counters (jobs_done, queue_wait) only grow over the executor's life.
struct executor_stats {
    std::optional<std::uint64_t> threads;         // threads that run jobs
    std::optional<std::uint64_t> threads_busy;    // of them, inside a job now
    std::optional<std::uint64_t> threads_parked;  // of them, blocked waiting for work
    // Of the busy ones, those that ran little lately: blocked outside the
    // application's code (I/O, a lock) or queued for the GIL. The pool
    // measures it while jobs wait for a thread (its growth follows it).
    std::optional<std::uint64_t> threads_blocked;
    std::optional<std::uint64_t> threads_max;     // the most threads it may run (m0 --check)
    std::optional<std::uint64_t> queue_depth;     // jobs submitted and not started yet
    std::optional<std::uint64_t> jobs_done;       // jobs run to their end
    std::optional<queue_wait_histogram> queue_wait;
    // Event-loop executors: how late the loop gets to work it was woken for
    // (the largest of its loops).
    std::optional<std::chrono::nanoseconds> loop_lag;
    // Threads written off at a request deadline (executor::write_off) that
    // have not returned yet.
    std::optional<std::uint64_t> threads_written_off;
};

class executor {
public:
    virtual ~executor() = default;
    virtual std::string_view name() const = 0;
    // Any thread (the metrics sampler, a few times a second), while the
    // executor runs and after it stopped: plain reads of counters the
    // executor keeps anyway, never a lock its job path takes. The default
    // knows nothing.
    virtual executor_stats stats() const { return {}; }
    // Before start(). May be called several times; hooks run in that order.
    virtual void add_thread_hooks(thread_hooks hooks) = 0;
    virtual void start() = 0;
    // One lane per reactor, created on the main thread before the reactors
    // run. The lane shares ownership of `waker`: executor threads may still
    // wake through it after the reactor is gone.
    virtual std::unique_ptr<executor_lane> make_lane(std::shared_ptr<reactor_waker> waker) = 0;
    // Jobs not yet run are cancelled (complete(true) via their lane); threads
    // are woken and joined, waiting at most `grace` for a thread still
    // inside a job (application code that never returns, say). Threads still
    // busy then are left running, detached, and counted in the result; the
    // executor's state stays alive for them. Idempotent (a second call
    // returns the first's count). Lanes must still be polled by their
    // reactors until jobs_in_flight() reaches 0, or be abandoned.
    virtual unsigned stop(std::chrono::milliseconds grace) = 0;
    // stop() waiting for every thread, however long it takes.
    unsigned stop() { return stop(std::chrono::milliseconds::max()); }

    // A request deadline passed while kernel thread `thread` (gettid) runs a
    // job of this executor, and the core gives that thread up: it no longer
    // counts towards the executor's size (a replacement may start at once),
    // and when its job returns it finishes that job (its completion runs, to
    // release what the job holds; the core sends nothing of it) and exits
    // instead of taking another. Any thread; must not block. False: this
    // executor cannot write a thread off (the default; the core then only
    // answers for the application and counts it), or `thread` runs none of
    // its jobs.
    virtual bool write_off(long thread) noexcept {
        (void)thread;
        return false;
    }
};

// The core's `inline` executor: runs each job on the reactor at submit time.
// The baseline every other executor is measured against.
M0_API std::unique_ptr<executor> make_inline_executor();

}  // namespace m0
