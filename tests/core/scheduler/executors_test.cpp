// A scheduler over several executors (`executors:` / `mounts:`): each worker
// gets a lane of every executor, and its one loop serves them all — a job on
// the second executor finishing on another thread wakes the worker and is
// waited for by the drain.
#define BOOST_TEST_MODULE scheduler_executors
#include <boost/test/unit_test.hpp>

#include <future>
#include <memory>
#include <thread>

#include "scheduler/scheduler.hpp"

using namespace std::chrono_literals;

namespace {

// Finishes on a thread of its own once `go` is set: like a coroutine job on
// an event loop, its completion arrives while the worker may be blocked.
class later_job final : public m0::job {
public:
    later_job(std::shared_future<void> go, std::thread& finisher, std::promise<std::thread::id>& completed_on)
        : go_(std::move(go)), finisher_(finisher), completed_on_(completed_on) {}
    bool finishes_later() const noexcept override { return true; }
    void run(m0::completion_port& port) noexcept override {
        finisher_ = std::thread([go = go_, &port] {
            go.wait();
            port.finish();
        });
    }
    void complete(bool cancelled) noexcept override {
        if (!cancelled) completed_on_.set_value(std::this_thread::get_id());
    }

private:
    std::shared_future<void> go_;
    std::thread& finisher_;
    std::promise<std::thread::id>& completed_on_;
};

// Submits one later_job to the second executor's lane and lets it finish
// when the drain begins.
class probe_frontend final : public m0::frontend {
public:
    void start_reactor(m0::reactor_context& ctx) override {
        lanes = ctx.executor_lanes.size();
        lane_is_first = ctx.lane == ctx.executor_lanes.front();
        worker_thread = std::this_thread::get_id();
        ctx.executor_lanes.at(1)->submit(std::make_unique<later_job>(go.get_future().share(), finisher, completed_on));
        ctx.add_drain_hook([this] { go.set_value(); });
    }

    std::size_t lanes = 0;
    bool lane_is_first = false;
    std::thread::id worker_thread;
    std::promise<void> go;
    std::thread finisher;
    std::promise<std::thread::id> completed_on;
};

}  // namespace

BOOST_AUTO_TEST_CASE(every_executor_has_a_lane_and_the_drain_waits_for_each) {
    auto first = m0::make_inline_executor();
    auto second = m0::make_inline_executor();
    probe_frontend frontend;
    m0::scheduler_options options;
    options.workers = 1;
    options.pin_cores = false;
    options.addresses.emplace_back(boost::asio::ip::make_address("127.0.0.1"), 0);
    auto completed = frontend.completed_on.get_future();
    {
        m0::scheduler s(frontend, std::vector<m0::executor*>{first.get(), second.get()}, options);
        s.start();
        BOOST_TEST(frontend.lanes == 2u);
        BOOST_TEST(frontend.lane_is_first);
        const auto reports = s.drain(10s);
        // The job finished after the drain began; the worker stayed for it.
        BOOST_TEST((completed.wait_for(0s) == std::future_status::ready));
        BOOST_TEST(reports.at(0).jobs_abandoned == 0u);
        BOOST_TEST(!reports.at(0).timed_out);
    }
    frontend.finisher.join();
    BOOST_REQUIRE((completed.wait_for(0s) == std::future_status::ready));
    BOOST_TEST((completed.get() == frontend.worker_thread));
}

BOOST_AUTO_TEST_CASE(a_scheduler_needs_an_executor) {
    m0::scheduler_options options;
    options.addresses.emplace_back(boost::asio::ip::make_address("127.0.0.1"), 0);
    probe_frontend frontend;
    BOOST_CHECK_THROW(m0::scheduler(frontend, std::vector<m0::executor*>{}, options), std::invalid_argument);
}
