// The seams an asynchronous frontend (ASGI) stands on, end to end over a
// real socket: a job that finishes later on the test-only async executor,
// request-body chunks the reactor pulls and posts into that job, and "client
// gone" reaching the job — while the reactor never runs the job's code.
#define BOOST_TEST_MODULE async_exchange
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/post.hpp>

#include <m0/http.hpp>
#include <m0/reactor_pass.hpp>

#include "core/executor/async_test_executor.hpp"
#include "core/http/test_client.hpp"
#include "core/http/test_server.hpp"
#include "support/executor_fixture.hpp"

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// What one upload's job keeps; touched only on the executor thread, except
// the atomics the test reads at the end.
struct upload_state {
    std::string body;
    std::thread::id job_thread;
    bool off_job_thread = false;  // something ran elsewhere
    m0::completion_port* port = nullptr;
    std::atomic<bool> saw_gone{false};
    std::atomic<bool> completed{false};
    // Set on the reactor when the lane refused a post; Boost.Test's macros
    // are not thread-safe, so the main thread checks this instead.
    std::atomic<bool> post_refused{false};
};

class upload_job final : public m0::job {
public:
    explicit upload_job(std::shared_ptr<upload_state> s) : state_(std::move(s)) {}
    bool finishes_later() const noexcept override { return true; }
    void run(m0::completion_port& port) noexcept override {
        state_->job_thread = std::this_thread::get_id();
        state_->port = &port;
    }
    void complete(bool) noexcept override { state_->completed = true; }

private:
    std::shared_ptr<upload_state> state_;
};

// Reactor side: no job state is touched here, only posted into the job.
class async_echo_handler final : public m0::http::handler {
public:
    explicit async_echo_handler(m0::executor_lane& lane) : lane_(lane) {}
    bool stream_body(const m0::http::request&) override { return true; }

    void on_request(m0::http::exchange_ptr ex) override {
        auto state = std::make_shared<upload_state>();
        last_ = state;
        lane_.submit(std::make_unique<upload_job>(state));
        ex->on_client_gone([this, state] {
            in_job(state, [state] {
                state->saw_gone = true;
                state->port->finish();  // nothing left to answer
            });
        });
        pull(std::move(ex), state);
    }

    std::shared_ptr<upload_state> last_;

private:
    template <class F>
    void in_job(const std::shared_ptr<upload_state>& state, F fn) {
        bool posted = lane_.post_fn_to_job([state, fn] {
            if (std::this_thread::get_id() != state->job_thread) state->off_job_thread = true;
            fn();
        });
        if (!posted) state->post_refused = true;
    }

    void pull(m0::http::exchange_ptr ex, std::shared_ptr<upload_state> state) {
        ex->read_body(4, [this, ex, state](boost::system::error_code ec, std::string chunk, bool last) {
            if (ec) return;  // the client went away: on_client_gone tells the job
            in_job(state, [state, chunk] { state->body += chunk; });
            if (!last) {
                pull(ex, state);
                return;
            }
            in_job(state, [state, ex] {
                // The job answers through the reactor, then finishes.
                state->port->post_fn([ex, body = state->body] { ex->respond(200, {}, "got " + body); });
                state->port->finish();
            });
        });
    }

    m0::executor_lane& lane_;
};

// One reactor thread running the engine over an async executor lane.
struct async_server {
    async_server() {
        executor.start();
        lane = executor.make_lane(waker);
        ctx.io = &io;
        ctx.listeners.push_back(&listener);
        ctx.stats = &stats;
        ctx.limits = &limits;
        ctx.lane = lane.get();
        handler = std::make_unique<async_echo_handler>(*lane);
        thread = std::thread([this] {
            m0::http::serve(ctx, *handler);
            while (!stop) m0::run_reactor_pass(io, *lane);
            ctx.run_force_close_hooks();
            listener.close();
            while (lane->jobs_in_flight() > 0) m0::run_reactor_pass(io, *lane);
            ctx.clear_hooks();
            io.poll();
        });
    }
    ~async_server() {
        asio::post(io, [this] { stop = true; });
        thread.join();
        waker->detach();
        executor.stop();
    }
    // Runs on the reactor and waits.
    template <class F>
    auto on_reactor(F fn) {
        std::promise<decltype(fn())> done;
        asio::post(io, [&] { done.set_value(fn()); });
        return done.get_future().get();
    }

    asio::io_context io{1};
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::shared_ptr<m0::test::io_waker> waker = std::make_shared<m0::test::io_waker>(io);
    m0::test::async_test_executor executor;
    std::unique_ptr<m0::executor_lane> lane;
    m0::test::test_listener listener{io};
    m0::reactor_stats stats;
    m0::http_limits limits;
    m0::reactor_context ctx;
    std::unique_ptr<async_echo_handler> handler;
    bool stop = false;  // reactor thread only
    std::thread thread;
};

}  // namespace

BOOST_AUTO_TEST_CASE(body_chunks_reach_a_job_that_answers_and_finishes_later) {
    async_server server;
    m0::test::test_client client(server.listener.local_endpoint().port());
    client.send("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\nhello ");
    client.send("async ");
    client.send("world");
    auto r = client.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
    BOOST_TEST(r->body == "got hello async world");
    auto state = server.on_reactor([&] { return server.handler->last_; });
    BOOST_REQUIRE(m0::test::eventually([&] { return state->completed.load(); }));
    BOOST_TEST(!state->post_refused.load());
    BOOST_TEST(!state->off_job_thread);
    BOOST_TEST(!state->saw_gone.load());
    BOOST_TEST(server.on_reactor([&] { return server.lane->jobs_in_flight(); }) == 0u);
}

BOOST_AUTO_TEST_CASE(a_client_gone_mid_body_reaches_the_job_which_then_finishes) {
    async_server server;
    m0::test::test_client client(server.listener.local_endpoint().port());
    client.send("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npartial");
    // The job has the first chunks once the reactor pulled them.
    BOOST_REQUIRE(m0::test::eventually([&] {
        auto s = server.on_reactor([&] { return server.handler->last_; });
        return s && server.on_reactor([&] { return server.lane->jobs_in_flight(); }) == 1u;
    }));
    client.reset();
    auto state = server.on_reactor([&] { return server.handler->last_; });
    BOOST_REQUIRE(m0::test::eventually([&] { return state->completed.load(); }));
    BOOST_TEST(state->saw_gone.load());
    BOOST_TEST(!state->post_refused.load());
    BOOST_TEST(!state->off_job_thread);
    BOOST_TEST(server.on_reactor([&] { return server.lane->jobs_in_flight(); }) == 0u);
}
