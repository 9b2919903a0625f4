#pragma once
// A reactor for the pool's tests: a real io_context, a waker that posts a
// no-op to it, and the SDK's reactor pass (the scheduler's loop), bounded by
// a deadline so a lost wake fails a test instead of hanging it.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>

#include <m0/executor.hpp>
#include <m0/reactor_pass.hpp>

#include "pool_executor.hpp"

namespace m0::pool::test {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class io_waker final : public reactor_waker {
public:
    explicit io_waker(boost::asio::io_context& io) : io_(&io) {}
    void wake() noexcept override {
        std::lock_guard lock(mutex_);
        if (io_) boost::asio::post(*io_, [] {});
    }
    void detach() {
        std::lock_guard lock(mutex_);
        io_ = nullptr;
    }

private:
    std::mutex mutex_;
    boost::asio::io_context* io_;
};

struct test_reactor {
    explicit test_reactor(executor& ex) : lane(ex.make_lane(waker)) {}
    // The lane may hold the waker past the reactor: it must not post then.
    ~test_reactor() { waker->detach(); }

    // Runs the loop until pred() holds (true) or the deadline passes (false).
    template <class Pred>
    bool run_until(Pred pred, std::chrono::nanoseconds timeout) {
        const auto deadline = clock_type::now() + timeout;
        for (;;) {
            if (pred()) return true;
            const auto now = clock_type::now();
            if (now >= deadline) return false;
            run_reactor_pass(io, *lane, deadline);
        }
    }
    bool drain(std::chrono::nanoseconds timeout) {
        return run_until([&] { return lane->jobs_in_flight() == 0; }, timeout);
    }

    boost::asio::io_context io{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
    std::shared_ptr<io_waker> waker = std::make_shared<io_waker>(io);
    std::unique_ptr<executor_lane> lane;
};

// A job from two callables.
class fn_job final : public job {
public:
    fn_job(std::function<void(completion_port&)> run, std::function<void(bool)> complete)
        : run_(std::move(run)), complete_(std::move(complete)) {}
    void run(completion_port& port) noexcept override { run_(port); }
    void complete(bool cancelled) noexcept override { complete_(cancelled); }

private:
    std::function<void(completion_port&)> run_;
    std::function<void(bool)> complete_;
};

inline std::unique_ptr<job> make_job(std::function<void(completion_port&)> run,
                                     std::function<void(bool)> complete) {
    return std::make_unique<fn_job>(std::move(run), std::move(complete));
}

// A barrier whose wait gives up after a timeout (false), so a job that can
// never meet its siblings fails the test rather than hanging the pool.
class timed_barrier {
public:
    explicit timed_barrier(unsigned parties) : parties_(parties) {}
    bool arrive_and_wait(std::chrono::nanoseconds timeout) {
        std::unique_lock lock(mutex_);
        if (++arrived_ >= parties_) {
            cv_.notify_all();
            return true;
        }
        return cv_.wait_for(lock, timeout, [&] { return arrived_ >= parties_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    unsigned parties_;
    unsigned arrived_ = 0;
};

// Polls cond every 100 µs until it holds or the timeout passes.
template <class Cond>
bool eventually(Cond cond, std::chrono::nanoseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    while (!cond()) {
        if (clock_type::now() >= deadline) return false;
        std::this_thread::sleep_for(100us);
    }
    return true;
}

}  // namespace m0::pool::test

namespace m0::pool {
// Names the ring kind in data-driven test case names.
inline std::ostream& operator<<(std::ostream& os, ring_kind kind) { return os << to_string(kind); }
}  // namespace m0::pool
