// A scheduler over several executors (`executors:` / `mounts:`): each worker
// gets a lane of every executor, and its one loop serves them all — a job on
// the second executor finishing on another thread wakes the worker and is
// waited for by the drain.
#define BOOST_TEST_MODULE scheduler_executors
#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include <boost/asio/post.hpp>

#include "scheduler_plugins.hpp"

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

// Finishes the jobs handed to it, one at a time, on a thread of its own.
class finisher_thread {
public:
    finisher_thread()
        : thread_([this] {
              for (;;) {
                  std::unique_lock lock(mutex_);
                  ready_.wait(lock, [this] { return stop_ || !ports_.empty(); });
                  if (ports_.empty()) return;
                  m0::completion_port* port = ports_.front();
                  ports_.pop_front();
                  lock.unlock();
                  port->finish();
              }
          }) {}
    ~finisher_thread() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        ready_.notify_one();
        thread_.join();
    }
    void finish(m0::completion_port& port) {
        {
            std::lock_guard lock(mutex_);
            ports_.push_back(&port);
        }
        ready_.notify_one();
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<m0::completion_port*> ports_;
    bool stop_ = false;
    std::thread thread_;
};

// Submits `total` jobs one after another, each once the one before has
// completed: the worker has nothing else to do, so it is mostly blocked in
// its io_context when the finisher thread ends a job, and every completion
// has to wake it again.
class chain_frontend final : public m0::frontend {
public:
    explicit chain_frontend(int total) : total_(total) {}

    class chained_job final : public m0::job {
    public:
        explicit chained_job(chain_frontend& f) : f_(f) {}
        bool finishes_later() const noexcept override { return true; }
        void run(m0::completion_port& port) noexcept override { f_.finisher_.finish(port); }
        void complete(bool cancelled) noexcept override {
            if (cancelled) return;
            chain_frontend& f = f_;
            // The next job from the loop, not from inside this completion.
            boost::asio::post(*f.io_, [&f] { f.next(); });
        }

    private:
        chain_frontend& f_;
    };

    void start_reactor(m0::reactor_context& ctx) override {
        io_ = ctx.io;
        lane_ = ctx.lane;
        next();
    }
    void next() {
        if (completed_++ == total_) {
            all_done.set_value();
            return;
        }
        lane_->submit(std::make_unique<chained_job>(*this));
    }

    std::promise<void> all_done;

private:
    const int total_;
    int completed_ = -1;  // next() also runs before the first job
    boost::asio::io_context* io_ = nullptr;
    m0::executor_lane* lane_ = nullptr;
    finisher_thread finisher_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_blocked_worker_is_woken_by_every_completion) {
    auto executor = m0::make_inline_executor();
    chain_frontend frontend(500);
    auto options = m0::test::loopback_options(1);
    options.pin_cores = false;
    auto done = frontend.all_done.get_future();
    auto s = m0::test::make_reactors(m0::test::scheduler_yaml("reactors"), frontend, {executor.get()}, options);
    s->start();
    // A lost wake leaves the worker blocked with a completion waiting.
    BOOST_TEST((done.wait_for(60s) == std::future_status::ready));
    const auto reports = s->drain(10s);
    BOOST_TEST(!reports.at(0).timed_out);
}

BOOST_AUTO_TEST_CASE(every_executor_has_a_lane_and_the_drain_waits_for_each) {
    auto first = m0::make_inline_executor();
    auto second = m0::make_inline_executor();
    probe_frontend frontend;
    auto options = m0::test::loopback_options(1);
    options.pin_cores = false;
    auto completed = frontend.completed_on.get_future();
    {
        auto s = m0::test::make_reactors(m0::test::scheduler_yaml("reactors"), frontend, {first.get(), second.get()},
                                         options);
        s->start();
        BOOST_TEST(frontend.lanes == 2u);
        BOOST_TEST(frontend.lane_is_first);
        const auto reports = s->drain(10s);
        // The job finished after the drain began; the worker stayed for it.
        BOOST_TEST((completed.wait_for(0s) == std::future_status::ready));
        BOOST_TEST(reports.at(0).jobs_abandoned == 0u);
        BOOST_TEST(!reports.at(0).timed_out);
    }
    frontend.finisher.join();
    BOOST_REQUIRE((completed.wait_for(0s) == std::future_status::ready));
    BOOST_TEST((completed.get() == frontend.worker_thread));
}

BOOST_AUTO_TEST_CASE(every_scheduler_needs_an_executor) {
    probe_frontend frontend;
    for (const auto& s : m0::test::every_scheduler())
        BOOST_CHECK_THROW(m0::test::make_reactors(s.yaml, frontend, {}, m0::test::loopback_options(1)),
                          std::invalid_argument);
}
