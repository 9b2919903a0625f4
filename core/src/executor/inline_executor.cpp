// The `inline` executor: runs every job on the reactor thread at submit time.
// No hand-off at all, which makes it the baseline the pool is measured
// against, and the right choice for native handlers that never block.
#include <m0/executor.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace m0 {
namespace {

// Thread hooks run once per reactor thread that runs a job (a Python thread
// state for the reactor thread, say), and on_stop when the lane goes away on
// that same thread.
struct hook_list {
    std::vector<thread_hooks> hooks;
};

// What a job that finishes later sends back from other threads: posted
// tasks and its end, queued in order for the reactor. Shared by the lane and
// the ports of such jobs, so a late finish() after the reactor left touches
// nothing freed.
struct inline_returns {
    explicit inline_returns(std::shared_ptr<reactor_waker> w) : waker(std::move(w)) {}

    struct entry {
        std::unique_ptr<reactor_task> task;  // null: `done` finished
        job* done = nullptr;
    };

    // Any thread: queue, then wake the reactor if it announced a wait.
    void push(entry e) {
        bool wake = false;
        {
            std::lock_guard lock(mutex);
            queue.push_back(std::move(e));
            wake = std::exchange(reactor_waiting, false);
        }
        if (wake) waker->wake();
    }

    const std::shared_ptr<reactor_waker> waker;
    std::mutex mutex;
    std::deque<entry> queue;
    bool reactor_waiting = false;
};

// The port of a job that finishes later. Posts from the reactor thread while
// the job is still inside run() go through the queue too, so they keep their
// order with posts from other threads.
struct deferred_inline_port final : completion_port {
    deferred_inline_port(std::shared_ptr<inline_returns> r, job* j) : returns(std::move(r)), owner(j) {}
    void post(std::unique_ptr<reactor_task> task) override { returns->push({std::move(task), nullptr}); }
    void finish() noexcept override {
        returns->push({nullptr, owner});
        delete this;
    }
    std::shared_ptr<inline_returns> returns;
    job* owner;
};

// Jobs a lane ran to their end: written by its reactor alone (a load and a
// store), read by the executor's stats().
using done_counter = std::atomic<std::uint64_t>;

class inline_lane final : public executor_lane, private completion_port {
public:
    inline_lane(std::shared_ptr<const hook_list> hooks, std::shared_ptr<reactor_waker> waker,
                std::shared_ptr<done_counter> done)
        : hooks_(std::move(hooks)), returns_(std::make_shared<inline_returns>(std::move(waker))),
          done_(std::move(done)) {}

    ~inline_lane() override {
        if (hooks_started_) {
            for (auto it = hooks_->hooks.rbegin(); it != hooks_->hooks.rend(); ++it)
                if (it->on_stop) it->on_stop();
        }
    }

    void submit(std::unique_ptr<job> j) override {
        if (!hooks_started_) {
            hooks_started_ = true;
            for (auto& h : hooks_->hooks)
                if (h.on_start) h.on_start();
        }
        ++in_flight_;
        if (j->finishes_later()) {
            job* raw = j.release();
            raw->run(*new deferred_inline_port(returns_, raw));
            return;
        }
        j->run(*this);
        j->complete(false);
        --in_flight_;
        count_done();
    }

    std::size_t poll_completions() override {
        std::deque<inline_returns::entry> batch;
        {
            std::lock_guard lock(returns_->mutex);
            if (returns_->queue.empty()) return 0;
            batch.swap(returns_->queue);
        }
        for (auto& e : batch) {
            if (e.task) {
                e.task->run_on_reactor();
            } else {
                e.done->complete(false);
                delete e.done;
                --in_flight_;
                count_done();
            }
        }
        return batch.size();
    }

    // Announce, re-check, block: under the queue's mutex a pusher either
    // finds the announcement or the reactor finds the entry.
    bool prepare_to_wait() override {
        std::lock_guard lock(returns_->mutex);
        if (!returns_->queue.empty()) return false;
        returns_->reactor_waiting = true;
        return true;
    }
    void finished_waiting() override {
        std::lock_guard lock(returns_->mutex);
        returns_->reactor_waiting = false;
    }
    std::size_t jobs_in_flight() const override { return in_flight_; }

    // The job runs on this very reactor thread, so a job task can run at once.
    bool post_to_job(std::unique_ptr<job_task> task) override {
        task->run_in_job();
        return true;
    }

private:
    void count_done() noexcept { done_->store(done_->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

    // A job that finishes when run() returns runs on this very reactor
    // thread, so a task it posts can run at once: in order, before
    // complete(), and a streamed chunk reaches the socket while the job is
    // still producing the next one.
    void post(std::unique_ptr<reactor_task> task) override { task->run_on_reactor(); }
    void finish() noexcept override {}

    std::shared_ptr<const hook_list> hooks_;
    std::shared_ptr<inline_returns> returns_;
    const std::shared_ptr<done_counter> done_;
    std::size_t in_flight_ = 0;
    bool hooks_started_ = false;
};

class inline_executor final : public executor {
public:
    std::string_view name() const override { return "inline"; }
    void add_thread_hooks(thread_hooks hooks) override { hooks_->hooks.push_back(std::move(hooks)); }
    void start() override {}
    std::unique_ptr<executor_lane> make_lane(std::shared_ptr<reactor_waker> waker) override {
        auto done = std::make_shared<done_counter>(0);
        {
            std::lock_guard lock(lanes_mutex_);
            done_.push_back(done);
        }
        return std::make_unique<inline_lane>(hooks_, std::move(waker), std::move(done));
    }
    unsigned stop(std::chrono::milliseconds) override { return 0; }

    // Jobs run on the reactor that submits them: nothing ever queues, and the
    // threads are the reactors (counted as such, not here).
    executor_stats stats() const override {
        executor_stats st;
        st.queue_depth = 0;
        std::uint64_t done = 0;
        std::lock_guard lock(lanes_mutex_);
        for (const auto& d : done_) done += d->load(std::memory_order_relaxed);
        st.jobs_done = done;
        return st;
    }

private:
    std::shared_ptr<hook_list> hooks_ = std::make_shared<hook_list>();
    mutable std::mutex lanes_mutex_;  // make_lane (main thread) against stats()
    std::vector<std::shared_ptr<done_counter>> done_;
};

}  // namespace

std::unique_ptr<executor> make_inline_executor() { return std::make_unique<inline_executor>(); }

}  // namespace m0
