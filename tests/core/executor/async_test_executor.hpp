#pragma once
// A test-only executor of the asynchronous kind: one executor thread that
// runs jobs and the tasks reactors send into them from one queue, as an
// event loop does. A job that finishes later is finished by whatever thread
// the test chooses. It offers the reactor → job path, which a blocking pool
// does not, so the seam's async contract can be tested without Python.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <m0/executor.hpp>

namespace m0::test {

class async_test_executor final : public executor {
public:
    using executor::stop;
    ~async_test_executor() override { stop(); }

    std::string_view name() const override { return "async-test"; }
    void add_thread_hooks(thread_hooks) override {}
    void start() override {
        thread_ = std::thread([this] { loop(); });
    }
    std::unique_ptr<executor_lane> make_lane(std::shared_ptr<reactor_waker> waker) override {
        return std::make_unique<lane>(*this, std::make_shared<returns>(std::move(waker)));
    }
    unsigned stop(std::chrono::milliseconds) override {
        {
            std::lock_guard lock(mutex_);
            if (stopped_) return 0;
            stopped_ = true;
        }
        ready_.notify_all();
        if (thread_.joinable()) thread_.join();
        return 0;
    }
    std::thread::id thread_id() const { return thread_.get_id(); }

private:
    // Completions on their way to one reactor (any thread → reactor).
    struct returns {
        explicit returns(std::shared_ptr<reactor_waker> w) : waker(std::move(w)) {}
        void push(std::function<void()> fn) {
            bool wake;
            {
                std::lock_guard lock(mutex);
                queue.push_back(std::move(fn));
                wake = std::exchange(waiting, false);
            }
            if (wake) waker->wake();
        }
        std::shared_ptr<reactor_waker> waker;
        std::mutex mutex;
        std::deque<std::function<void()>> queue;
        bool waiting = false;
    };

    struct port final : completion_port {
        port(std::shared_ptr<returns> r, job* j, std::size_t* in_flight)
            : back(std::move(r)), owner(j), in_flight(in_flight) {}
        void post(std::unique_ptr<reactor_task> task) override {
            back->push([t = std::shared_ptr<reactor_task>(std::move(task))] { t->run_on_reactor(); });
        }
        void finish() noexcept override {
            back->push([j = owner, n = in_flight] {
                j->complete(false);
                delete j;
                --*n;
            });
            delete this;
        }
        std::shared_ptr<returns> back;
        job* owner;
        std::size_t* in_flight;  // the lane's, touched on the reactor only
    };

    class lane final : public executor_lane {
    public:
        lane(async_test_executor& ex, std::shared_ptr<returns> r) : ex_(ex), back_(std::move(r)) {}
        void submit(std::unique_ptr<job> j) override {
            ++in_flight_;
            job* raw = j.release();
            ex_.enqueue([raw, p = new port(back_, raw, &in_flight_)] {
                const bool later = raw->finishes_later();
                raw->run(*p);
                if (!later) p->finish();
            });
        }
        std::size_t poll_completions() override {
            std::deque<std::function<void()>> batch;
            {
                std::lock_guard lock(back_->mutex);
                batch.swap(back_->queue);
            }
            for (auto& fn : batch) fn();
            return batch.size();
        }
        bool prepare_to_wait() override {
            std::lock_guard lock(back_->mutex);
            if (!back_->queue.empty()) return false;
            back_->waiting = true;
            return true;
        }
        void finished_waiting() override {
            std::lock_guard lock(back_->mutex);
            back_->waiting = false;
        }
        std::size_t jobs_in_flight() const override { return in_flight_; }
        bool post_to_job(std::unique_ptr<job_task> task) override {
            ex_.enqueue([t = std::shared_ptr<job_task>(std::move(task))] { t->run_in_job(); });
            return true;
        }

    private:
        async_test_executor& ex_;
        std::shared_ptr<returns> back_;
        std::size_t in_flight_ = 0;
    };

    void enqueue(std::function<void()> fn) {
        {
            std::lock_guard lock(mutex_);
            queue_.push_back(std::move(fn));
        }
        ready_.notify_one();
    }

    void loop() {
        std::unique_lock lock(mutex_);
        for (;;) {
            ready_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
            if (queue_.empty()) return;
            auto fn = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            fn();
            lock.lock();
        }
    }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> queue_;
    bool stopped_ = false;
    std::thread thread_;
};

}  // namespace m0::test
