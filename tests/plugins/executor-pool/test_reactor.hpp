#pragma once
// What the pool's tests share: the executor fixture (a reactor running the
// SDK's reactor pass, jobs from callables) and a few waiting helpers.
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
#include "support/executor_fixture.hpp"

namespace m0::pool::test {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using m0::test::make_job;
using m0::test::test_reactor;

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
