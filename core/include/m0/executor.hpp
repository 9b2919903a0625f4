#pragma once
// Executor seam: runs jobs off the reactor thread and hands their completions
// back to the reactor that submitted them (GUIDE sections 2 and 5).
//
// Threading contract:
//  * executor_lane::submit, poll_completions, prepare_to_wait,
//    finished_waiting and on_reactor_pass are called only by the lane's own
//    reactor thread.
//  * job::run runs on an executor thread (or, for `inline`, on the reactor).
//  * job::complete and every reactor_task posted through a completion_port
//    run on the submitting reactor thread, in the order they were posted.
// Swapping the executor must not change a line of frontend code.
#include <cstddef>
#include <functional>
#include <memory>
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

// Given to a running job: sends reactor_tasks back to the submitting reactor.
class completion_port {
public:
    virtual ~completion_port() = default;
    virtual void post(std::unique_ptr<reactor_task> task) = 0;

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
    // Executor thread. May post any number of reactor_tasks (partial results).
    virtual void run(completion_port& port) noexcept = 0;
    // Submitting reactor thread, after every task this job posted has run.
    // cancelled == true: the executor shut down before run() was called.
    // The executor deletes the job right after this returns.
    virtual void complete(bool cancelled) noexcept = 0;
};

// Makes a reactor's blocking wait return; callable from any thread.
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
};

// Run on every thread that will run jobs: on_start once before its first job,
// on_stop once when it exits. Lets a frontend create per-thread state (a
// Python thread state) once per thread instead of once per job.
struct thread_hooks {
    std::function<void()> on_start;
    std::function<void()> on_stop;
};

class executor {
public:
    virtual ~executor() = default;
    virtual std::string_view name() const = 0;
    // Before start(). May be called several times; hooks run in that order.
    virtual void add_thread_hooks(thread_hooks hooks) = 0;
    virtual void start() = 0;
    // One lane per reactor, created on the main thread before the reactors run.
    virtual std::unique_ptr<executor_lane> make_lane(reactor_waker& waker) = 0;
    // Jobs not yet run are cancelled (complete(true) via their lane); threads
    // are woken and joined. Idempotent. Lanes must still be polled by their
    // reactors until jobs_in_flight() reaches 0.
    virtual void stop() = 0;
};

// The core's `inline` executor: runs each job on the reactor at submit time.
// The baseline every other executor is measured against.
M0_API std::unique_ptr<executor> make_inline_executor();

}  // namespace m0
