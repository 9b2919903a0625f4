// `executor.type: condvar` — the textbook thread pool as an m0 executor,
// written from the SDK headers alone: one job queue behind a mutex and a
// condition variable (each submit a lock and a notify), a fixed number of
// threads, and per reactor a completion queue behind a mutex that wakes its
// reactor through the reactor_waker. A model for executor authors, and the
// baseline m0's ring-based pool (plugins/executor-pool) is compared against.
//
// Who runs what (m0/executor.hpp):
//  * reactor thread: condvar_lane (submit, poll_completions, prepare_to_wait,
//    finished_waiting), and every job's complete() and reactor_task;
//  * m0-condvar-N threads: thread_main, each job's run(), the thread hooks;
//  * the main thread: the factory, add_thread_hooks, start, make_lane, stop;
//  * any thread: stats() (the metrics sampler) and a finishes-later job's
//    port.finish().
#include <pthread.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <m0/config.hpp>
#include <m0/executor.hpp>
#include <m0/log.hpp>
#include <m0/plugin.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

// A relaxed counter: stats() reads it from another thread while one writer
// (or writers that hold the same mutex) updates it with a load and a store.
using counter = std::atomic<std::uint64_t>;
void bump(counter& c, std::int64_t delta = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(delta), std::memory_order_relaxed);
}

// One reactor's end of the executor, shared (std::shared_ptr) by its lane,
// every job queued or running for it and every port of a job that finishes
// later. A thread stuck in application code after stop() returned, or a
// finish() that comes after the reactor left, still pushes here: shared
// ownership keeps the queue, its mutex and the waker alive for it.
struct lane_state {
    explicit lane_state(std::shared_ptr<m0::reactor_waker> w) : waker(std::move(w)) {}

    struct completion {
        m0::reactor_task* task = nullptr;  // a task posted by a running job, or
        m0::job* done = nullptr;           // a job that has finished
    };

    // Any thread: queue a completion, then wake the reactor if it announced
    // that it is about to block (prepare_to_wait). Both happen under the
    // mutex under which the reactor announces and re-checks, so either the
    // reactor's re-check finds this entry or this push finds the
    // announcement: no wake is lost, and a busy reactor gets none.
    void push(completion c) {
        bool wake = false;
        {
            std::lock_guard lock(mutex);
            completions.push_back(c);
            wake = std::exchange(reactor_waiting, false);
        }
        // Outside the lock: the reactor, woken, takes this mutex at once.
        if (wake) waker->wake();
    }

    const std::shared_ptr<m0::reactor_waker> waker;
    std::mutex mutex;
    // Raw pointers on purpose: entries left here when the reactor is gone
    // are never run and never deleted. Deleting a job without its
    // complete(), after the frontend that made it stopped, could touch
    // what the frontend freed; the process is exiting anyway.
    std::deque<completion> completions;
    bool reactor_waiting = false;
    // Jobs of this lane in the executor's queue (under the executor's
    // mutex): a stopping reactor must not block while it has some to cancel.
    std::atomic<std::size_t> queued{0};
};

struct queued_job {
    m0::job* j;
    std::shared_ptr<lane_state> lane;
    clock_type::time_point submitted;
};

// Everything the threads touch, shared by the executor, its lanes and each
// thread (which holds a std::shared_ptr to it): a thread left inside a job
// by stop(grace) keeps it alive after the executor is destroyed.
struct pool_state {
    std::mutex mutex;             // the queue, `stopping`, the threads' exits
    std::condition_variable work;  // a job was queued, or stop
    std::condition_variable exited_cv;
    std::deque<queued_job> queue;
    bool stopping = false;
    // Read by reactors without the mutex (poll_completions, prepare_to_wait).
    std::atomic<bool> stopping_seen{false};
    std::vector<bool> exited;  // per thread, under mutex
    std::vector<m0::thread_hooks> hooks;  // fixed before start()
    std::vector<std::shared_ptr<lane_state>> lanes;  // for stop()'s wake

    // For stats(), read without the mutex. Written under it (a load and a
    // store each), except busy and done, which a thread also changes right
    // after a job, outside the lock: those are fetch_add/fetch_sub.
    counter live{0}, parked{0}, depth{0};
    counter busy{0}, done{0};
    std::array<counter, m0::queue_wait_histogram::bounds_us.size() + 1> wait_buckets{};
    counter wait_sum_ns{0};
};

// The port of a job that finishes when run() returns: posts go straight to
// the lane's completion queue, in order before the job's own completion,
// which the thread pushes after run() returns.
struct blocking_port final : m0::completion_port {
    explicit blocking_port(lane_state& l) : lane(l) {}
    void post(std::unique_ptr<m0::reactor_task> task) override { lane.push({task.release(), nullptr}); }
    void finish() noexcept override {}  // the job's end is its return from run()
    lane_state& lane;
};

// The port of a job that finishes later (finishes_later(): a coroutine, a
// callback from a library's own thread). It lives until the job calls
// finish(), from any thread, maybe long after run() returned and this
// thread took other jobs; it holds the lane so that a finish() after the
// reactor left touches nothing freed. finish() queues the job's completion
// behind everything it posted, so complete() runs after them (the seam's
// promise).
struct deferred_port final : m0::completion_port {
    deferred_port(std::shared_ptr<lane_state> l, m0::job* j) : lane(std::move(l)), owner(j) {}
    void post(std::unique_ptr<m0::reactor_task> task) override { lane->push({task.release(), nullptr}); }
    void finish() noexcept override {
        lane->push({nullptr, owner});
        delete this;
    }
    std::shared_ptr<lane_state> lane;
    m0::job* owner;
};

void run_job(pool_state& pool, queued_job& q) {
    // Read once, before run() (the seam's rule): a job that finishes later
    // may be gone when run() returns, if it already called finish().
    const bool later = q.j->finishes_later();
    if (later) {
        // Its run() returns once the work has started: the thread is free
        // for the next job, and the completion comes with finish().
        q.j->run(*new deferred_port(q.lane, q.j));
    } else {
        blocking_port port(*q.lane);
        q.j->run(port);
    }
    // Counted before the completion is pushed: a reactor that ran the
    // completion reads stats() that include the job.
    pool.done.fetch_add(1, std::memory_order_relaxed);
    pool.busy.fetch_sub(1, std::memory_order_relaxed);
    if (!later) q.lane->push({nullptr, q.j});
}

// Takes the queue's first job: the caller holds pool.mutex.
queued_job take_locked(pool_state& pool) {
    queued_job q = std::move(pool.queue.front());
    pool.queue.pop_front();
    q.lane->queued.fetch_sub(1, std::memory_order_relaxed);
    bump(pool.depth, -1);
    pool.busy.fetch_add(1, std::memory_order_relaxed);
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - q.submitted);
    const auto ns = static_cast<std::uint64_t>(waited.count() > 0 ? waited.count() : 0);
    bump(pool.wait_buckets[m0::queue_wait_histogram::bucket_of(ns)]);
    bump(pool.wait_sum_ns, static_cast<std::int64_t>(ns));
    return q;
}

void thread_main(std::shared_ptr<pool_state> pool, unsigned index) {
    // `top -H`, `ps -L`, bench/thread_cpu and bench/compare find the
    // threads by this name.
    const std::string name = "m0-condvar-" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.c_str());
    for (auto& h : pool->hooks)
        if (h.on_start) h.on_start();

    std::unique_lock lock(pool->mutex);
    for (;;) {
        if (!pool->stopping && !pool->queue.empty()) {
            // Jobs taken back to back: no on_idle between them, which is
            // what lets a frontend keep the GIL from one job to the next.
            queued_job q = take_locked(*pool);
            lock.unlock();
            run_job(*pool, q);
            lock.lock();
            continue;
        }
        // No job to take (or stopping): on_idle before waiting or exiting,
        // outside the lock (a hook may take a while). The WSGI frontend
        // keeps the GIL between jobs and gives it up here; a thread that
        // waited holding it would keep every other thread out of Python,
        // and two threads would deadlock.
        lock.unlock();
        for (auto& h : pool->hooks)
            if (h.on_idle) h.on_idle();
        lock.lock();
        // The condition variable's own protocol: the predicate is read
        // under the mutex submit() holds to queue, and wait() releases it
        // atomically with going to sleep, so a job queued after this check
        // is a notify this wait receives. A spurious return, or a job a
        // sibling took first, just waits again (on_idle ran already).
        while (!pool->stopping && pool->queue.empty()) {
            bump(pool->parked);
            pool->work.wait(lock);
            bump(pool->parked, -1);
        }
        if (pool->stopping) break;
    }
    lock.unlock();

    // Stopped: jobs still queued are not run; their reactors cancel them
    // (condvar_lane::cancel_queued). on_stop in reverse order.
    for (auto it = pool->hooks.rbegin(); it != pool->hooks.rend(); ++it)
        if (it->on_stop) it->on_stop();
    lock.lock();
    pool->exited[index] = true;
    bump(pool->live, -1);
    lock.unlock();
    pool->exited_cv.notify_all();
}

class condvar_lane final : public m0::executor_lane {
public:
    condvar_lane(std::shared_ptr<pool_state> pool, std::shared_ptr<lane_state> lane)
        : pool_(std::move(pool)), lane_(std::move(lane)) {}

    void submit(std::unique_ptr<m0::job> j) override {
        ++in_flight_;
        bool queued = false;
        {
            std::lock_guard lock(pool_->mutex);
            if (!pool_->stopping) {
                pool_->queue.push_back({j.release(), lane_, clock_type::now()});
                lane_->queued.fetch_add(1, std::memory_order_relaxed);
                bump(pool_->depth);
                queued = true;
            }
        }
        if (queued) {
            // Notified after the unlock, so the woken thread does not block
            // on the mutex we hold. glibc's notify_one makes no syscall
            // when no thread waits. The queue is unbounded: a submit never
            // drops or refuses a job, and the frontend can look at
            // jobs_in_flight() to stop reading requests.
            pool_->work.notify_one();
            return;
        }
        // After stop(): cancelled, on this reactor's next poll_completions
        // (not from inside submit, which a frontend may call with its own
        // state half updated).
        cancelled_.push_back(j.release());
    }

    std::size_t poll_completions() override {
        std::deque<lane_state::completion> batch;
        {
            std::lock_guard lock(lane_->mutex);
            batch.swap(lane_->completions);
        }
        // In the order pushed: a job's tasks, then its completion.
        for (const auto& c : batch) {
            if (c.task) {
                c.task->run_on_reactor();
                delete c.task;
            } else {
                finish(c.done, false);
            }
        }
        std::size_t n = batch.size();
        if (pool_->stopping_seen.load(std::memory_order_acquire)) n += cancel_queued();
        return n;
    }

    // The reactor is about to block. Announce, re-check, block — in that
    // order, or a completion pushed between the reactor's last poll and its
    // block would wait for some unrelated event (the lost wake-up):
    //  1. announce: reactor_waiting = true, under the lane's mutex;
    //  2. re-check, under the same lock: a completion already queued means
    //     "do not block" (and the announcement is taken back);
    //  3. block (the caller, in io_context::run_one).
    // A pusher takes the same mutex, queues and reads the flag: if it came
    // before step 1 the re-check sees its entry; after, it sees the flag and
    // wakes. The wake survives the race between step 2 and step 3 because
    // the waker posts a handler to the reactor's io_context, so a run_one
    // entered after the wake still returns at once: a wake must be a token,
    // never an edge that only a thread already asleep can see.
    bool prepare_to_wait() override {
        if (!cancelled_.empty()) return false;
        // Stopping with jobs of ours still queued: cancel them first.
        if (pool_->stopping_seen.load(std::memory_order_acquire) &&
            lane_->queued.load(std::memory_order_relaxed) > 0)
            return false;
        std::lock_guard lock(lane_->mutex);
        if (!lane_->completions.empty()) return false;
        lane_->reactor_waiting = true;
        return true;
    }

    // The block ended (a wake, or I/O): take the announcement back, so a
    // completion pushed while the reactor runs does not cost a wake.
    void finished_waiting() override {
        std::lock_guard lock(lane_->mutex);
        lane_->reactor_waiting = false;
    }

    std::size_t jobs_in_flight() const override { return in_flight_; }

    // post_to_job stays the default (false): a job holds its thread until
    // run() returns, so there is nothing on which to run a job_task, and a
    // frontend's job waits on state of its own instead.

private:
    void finish(m0::job* j, bool cancelled) noexcept {
        j->complete(cancelled);
        delete j;
        --in_flight_;
    }

    // After stop(): the queued jobs of this lane (no thread will take them)
    // and the ones submitted since are completed with cancelled == true, on
    // this reactor, as the seam requires.
    std::size_t cancel_queued() {
        std::vector<m0::job*> mine;
        if (lane_->queued.load(std::memory_order_relaxed) > 0) {
            std::lock_guard lock(pool_->mutex);
            for (auto it = pool_->queue.begin(); it != pool_->queue.end();) {
                if (it->lane == lane_) {
                    mine.push_back(it->j);
                    it = pool_->queue.erase(it);
                    lane_->queued.fetch_sub(1, std::memory_order_relaxed);
                    bump(pool_->depth, -1);
                } else {
                    ++it;
                }
            }
        }
        mine.insert(mine.end(), cancelled_.begin(), cancelled_.end());
        cancelled_.clear();
        for (m0::job* j : mine) finish(j, true);
        return mine.size();
    }

    const std::shared_ptr<pool_state> pool_;
    const std::shared_ptr<lane_state> lane_;
    std::vector<m0::job*> cancelled_;  // submitted after stop(); reactor-owned
    std::size_t in_flight_ = 0;        // reactor-owned: submit() to complete()
};

class condvar_executor final : public m0::executor {
public:
    explicit condvar_executor(unsigned threads) : threads_(threads) {}

    // The threads hold the pool state themselves: one stuck in a job is
    // left running (stop() detached it) and needs nothing from this object.
    ~condvar_executor() override { stop(std::chrono::milliseconds::max()); }

    std::string_view name() const override { return "condvar"; }

    void add_thread_hooks(m0::thread_hooks hooks) override { pool_->hooks.push_back(std::move(hooks)); }

    void start() override {
        if (!threads_list_.empty()) return;
        pool_->exited.assign(threads_, false);
        pool_->live.store(threads_, std::memory_order_relaxed);
        for (unsigned i = 0; i < threads_; ++i) threads_list_.emplace_back(thread_main, pool_, i);
    }

    // Main thread, before the reactors run.
    std::unique_ptr<m0::executor_lane> make_lane(std::shared_ptr<m0::reactor_waker> waker) override {
        auto lane = std::make_shared<lane_state>(std::move(waker));
        {
            std::lock_guard lock(pool_->mutex);
            pool_->lanes.push_back(lane);
        }
        return std::make_unique<condvar_lane>(pool_, std::move(lane));
    }

    // No thread takes a job after this; threads in a job get until `grace`
    // ends to return, then are left running (detached) and counted. The
    // core calls this with a short grace after the drain, and _exits the
    // process when threads were left, so a view that never returns (a
    // sleep, a lock nobody releases) cannot hold up the exit.
    unsigned stop(std::chrono::milliseconds grace) override {
        std::lock_guard stop_lock(stop_mutex_);
        if (stopped_) return abandoned_;
        stopped_ = true;
        {
            std::lock_guard lock(pool_->mutex);
            pool_->stopping = true;
        }
        pool_->stopping_seen.store(true, std::memory_order_release);
        pool_->work.notify_all();

        {
            std::unique_lock lock(pool_->mutex);
            const auto all_exited = [&] {
                for (bool e : pool_->exited)
                    if (!e) return false;
                return true;
            };
            if (grace == std::chrono::milliseconds::max())
                pool_->exited_cv.wait(lock, all_exited);
            else
                pool_->exited_cv.wait_until(lock, clock_type::now() + grace, all_exited);
            for (unsigned i = 0; i < threads_list_.size(); ++i) {
                if (pool_->exited[i]) continue;
                threads_list_[i].detach();  // its std::shared_ptr keeps pool_state alive
                ++abandoned_;
            }
        }
        for (auto& t : threads_list_)
            if (t.joinable()) t.join();
        if (abandoned_ > 0)
            m0::log::warning("condvar: " + std::to_string(abandoned_) +
                             " thread(s) still inside a job at shutdown; left running");

        // Reactors cancel what is left in the queue: make each look (the
        // wake is harmless to a reactor that already stopped).
        std::vector<std::shared_ptr<lane_state>> lanes;
        {
            std::lock_guard lock(pool_->mutex);
            lanes = pool_->lanes;
        }
        for (auto& l : lanes) l->waker->wake();
        return abandoned_;
    }

    // Relaxed reads of counters the threads keep under their own mutex:
    // the metrics sampler never takes a lock the job path takes.
    m0::executor_stats stats() const override {
        m0::executor_stats st;
        st.threads = pool_->live.load(std::memory_order_relaxed);
        st.threads_busy = pool_->busy.load(std::memory_order_relaxed);
        st.threads_parked = pool_->parked.load(std::memory_order_relaxed);
        st.queue_depth = pool_->depth.load(std::memory_order_relaxed);
        st.jobs_done = pool_->done.load(std::memory_order_relaxed);
        m0::queue_wait_histogram h;
        for (std::size_t i = 0; i < h.buckets.size(); ++i)
            h.buckets[i] = pool_->wait_buckets[i].load(std::memory_order_relaxed);
        h.sum_ns = pool_->wait_sum_ns.load(std::memory_order_relaxed);
        st.queue_wait = h;
        return st;
    }

    // Not overridden here: write_off(long thread). The core offers it, where
    // it has request deadlines, for a thread stuck in a job past its
    // request's deadline (the argument is that thread's gettid()); returning
    // false (the default) says "not supported", and the thread simply stays
    // busy. To support it, an executor would: record each thread's gettid()
    // when it starts; on write_off, mark that thread written off under the
    // mutex, stop counting it in `live` and `busy`, and start a replacement
    // thread (a new m0-condvar-N) so that `threads` keep serving; let the
    // stuck job finish normally (its completion is pushed as any other);
    // then end the thread instead of letting it take another job, and
    // count it in executor_stats::threads_written_off.

private:
    const unsigned threads_;
    const std::shared_ptr<pool_state> pool_ = std::make_shared<pool_state>();
    std::vector<std::thread> threads_list_;
    std::mutex stop_mutex_;  // stop() from the core and from the destructor
    bool stopped_ = false;
    unsigned abandoned_ = 0;
};

// The factory validates the plugin's own section (`executor.condvar`) as
// m0's plugins do: every key checked, errors collected and thrown together,
// each naming file:line:column and the key (`m0 --check` prints them all).
std::unique_ptr<m0::executor> make_condvar_executor(m0::plugin_context& ctx) {
    const m0::config_node& section = *ctx.section;
    m0::config_errors errors;
    errors.check([&] { section.allow_keys({"threads"}); });
    unsigned threads = 4;
    errors.check([&] { threads = static_cast<unsigned>(section.integer("threads", 4, 1, 256)); });
    errors.throw_if_any();
    return std::make_unique<condvar_executor>(threads);
}

}  // namespace

M0_EXECUTOR_PLUGIN("condvar", "textbook pool: a job queue behind a mutex and a condition variable (example)",
                   make_condvar_executor);
