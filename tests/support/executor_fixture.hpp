#pragma once
// A reactor for executor tests: a real io_context, a waker that posts a
// no-op to it, and the SDK's reactor pass (the scheduler's loop), bounded by
// a deadline so a lost wake fails a test instead of hanging it. Plus jobs
// made of callables.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include <m0/executor.hpp>
#include <m0/reactor_pass.hpp>

namespace m0::test {

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
            run_reactor_pass(io, *lane, deadline, &pass);
        }
    }
    bool drain(std::chrono::nanoseconds timeout) {
        return run_until([&] { return lane->jobs_in_flight() == 0; }, timeout);
    }

    boost::asio::io_context io{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
    std::shared_ptr<io_waker> waker = std::make_shared<io_waker>(io);
    std::unique_ptr<executor_lane> lane;
    reactor_pass_state pass;  // as the scheduler's loop keeps it
};

// A job from two callables; `later`: it finishes when it calls port.finish().
class fn_job final : public job {
public:
    fn_job(std::function<void(completion_port&)> run, std::function<void(bool)> complete, bool later)
        : run_(std::move(run)), complete_(std::move(complete)), later_(later) {}
    bool finishes_later() const noexcept override { return later_; }
    void run(completion_port& port) noexcept override { run_(port); }
    void complete(bool cancelled) noexcept override { complete_(cancelled); }

private:
    std::function<void(completion_port&)> run_;
    std::function<void(bool)> complete_;
    const bool later_;
};

inline std::unique_ptr<job> make_job(std::function<void(completion_port&)> run,
                                     std::function<void(bool)> complete) {
    return std::make_unique<fn_job>(std::move(run), std::move(complete), false);
}

inline std::unique_ptr<job> make_deferred_job(std::function<void(completion_port&)> run,
                                              std::function<void(bool)> complete) {
    return std::make_unique<fn_job>(std::move(run), std::move(complete), true);
}

}  // namespace m0::test
