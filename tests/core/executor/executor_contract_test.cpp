// The executor seam's contract, held against every executor kind: the core's
// inline executor, the ring-based pool, and a test-only asynchronous one
// (an event-loop shape: jobs that finish later, a reactor → job path). Built
// a second time with M0_CONTRACT_ASYNCIO for the asyncio executor, which
// needs an interpreter, and a third with M0_CONTRACT_CONDVAR for the
// out-of-tree example examples/condvar-pool-executor, whose one source file
// is compiled into the test.
#define BOOST_TEST_MODULE executor_contract
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/executor/async_test_executor.hpp"
#include "pool_executor.hpp"
#include "support/executor_fixture.hpp"
#ifdef M0_CONTRACT_ASYNCIO
#include <m0/python/interpreter.hpp>

#include "asyncio_executor.hpp"
#endif
#ifdef M0_CONTRACT_CONDVAR
#include "condvar_executor.cpp"
#endif

using namespace std::chrono_literals;
using m0::test::make_deferred_job;
using m0::test::make_job;
using m0::test::test_reactor;
namespace bdata = boost::unit_test::data;

namespace {

enum class kind { inline_, pool, async, asyncio, condvar };

std::ostream& operator<<(std::ostream& os, kind k) {
    return os << (k == kind::inline_  ? "inline"
                  : k == kind::pool    ? "pool"
                  : k == kind::async   ? "async"
                  : k == kind::condvar ? "condvar"
                                       : "asyncio");
}

std::unique_ptr<m0::executor> make(kind k) {
    switch (k) {
    case kind::inline_: return m0::make_inline_executor();
    case kind::pool: {
        m0::pool::pool_options o;
        o.threads = o.max_threads = 2;
        return std::make_unique<m0::pool::pool_executor>(o);
    }
    case kind::async: break;
    case kind::asyncio:
#ifdef M0_CONTRACT_ASYNCIO
        return std::make_unique<m0::asyncio::asyncio_executor>(m0::asyncio::asyncio_options{});
#else
        break;
#endif
    case kind::condvar:
#ifdef M0_CONTRACT_CONDVAR
        return std::make_unique<condvar_executor>(2);
#else
        break;
#endif
    }
    return std::make_unique<m0::test::async_test_executor>();
}

#ifdef M0_CONTRACT_ASYNCIO
struct interpreter {
    interpreter() { m0::python::start({}); }
};
BOOST_TEST_GLOBAL_FIXTURE(interpreter);
const auto all_kinds = bdata::make({kind::asyncio});
#elif defined(M0_CONTRACT_CONDVAR)
const auto all_kinds = bdata::make({kind::condvar});
#else
const auto all_kinds = bdata::make({kind::inline_, kind::pool, kind::async});
#endif

}  // namespace

// A job that finishes later is in flight until it says so, from a thread of
// its own; its posts run on the reactor in order, and complete() after them.
BOOST_DATA_TEST_CASE(a_job_finishing_later_completes_after_its_posts, all_kinds, k) {
    auto ex = make(k);
    test_reactor reactor(*ex);
    ex->start();
    const auto reactor_thread = std::this_thread::get_id();
    std::vector<std::string> seen;
    bool on_reactor = true;
    std::promise<m0::completion_port*> handed;
    reactor.lane->submit(make_deferred_job(
        [&](m0::completion_port& port) { handed.set_value(&port); },
        [&](bool cancelled) {
            on_reactor = on_reactor && std::this_thread::get_id() == reactor_thread;
            seen.push_back(cancelled ? "cancelled" : "complete");
        }));
    auto port_future = handed.get_future();
    // run() has returned (inline: at submit; others: on their thread), and
    // the job is still in flight however many passes the reactor makes.
    // (Waited for directly: nothing wakes the reactor when run() returns.)
    BOOST_REQUIRE(port_future.wait_for(10s) == std::future_status::ready);
    m0::completion_port* port = port_future.get();
    for (int pass = 0; pass < 20; ++pass) m0::run_reactor_pass(reactor.io, *reactor.lane, m0::test::clock_type::now());
    BOOST_TEST(reactor.lane->jobs_in_flight() == 1u);
    BOOST_TEST(seen.empty());

    std::thread finisher([&] {
        for (int i = 0; i < 3; ++i)
            port->post_fn([&, i] {
                on_reactor = on_reactor && std::this_thread::get_id() == reactor_thread;
                seen.push_back("post " + std::to_string(i));
            });
        port->finish();
    });
    BOOST_REQUIRE(reactor.drain(10s));
    finisher.join();
    BOOST_TEST(seen == (std::vector<std::string>{"post 0", "post 1", "post 2", "complete"}), boost::test_tools::per_element());
    BOOST_TEST(on_reactor);
    ex->stop();
}

// Handlers that keep posting follow-ups (a fan-out written in slices, each
// posting the next) do not hold a waiting completion back until the chain
// ends: a pass runs a bounded number of handlers, then the completions.
BOOST_DATA_TEST_CASE(a_completion_runs_between_handlers_that_keep_posting, all_kinds, k) {
    auto ex = make(k);
    test_reactor reactor(*ex);
    ex->start();
    std::promise<m0::completion_port*> handed;
    bool completed = false;
    reactor.lane->submit(make_deferred_job([&](m0::completion_port& port) { handed.set_value(&port); },
                                           [&](bool) { completed = true; }));
    auto port_future = handed.get_future();
    BOOST_REQUIRE(port_future.wait_for(10s) == std::future_status::ready);
    port_future.get()->finish();  // the completion waits for the reactor from now on
    constexpr int chain_length = 1'000'000;
    int chained = 0;
    std::function<void()> link = [&] {
        if (!completed && ++chained < chain_length) boost::asio::post(reactor.io, link);
    };
    boost::asio::post(reactor.io, link);
    for (int pass = 0; pass < 1000 && !completed; ++pass)
        m0::run_reactor_pass(reactor.io, *reactor.lane, m0::test::clock_type::now());
    BOOST_TEST(completed);
    BOOST_TEST(chained < chain_length / 2);  // long before the chain's end
    BOOST_REQUIRE(reactor.drain(10s));
    ex->stop();
}

// The reactor → job path: what the reactor sends (body chunks, then "client
// gone") reaches the job in order, on the thread that runs it, without the
// reactor waiting. The blocking pool does not offer it and says so.
BOOST_DATA_TEST_CASE(the_reactor_reaches_a_running_job_in_order, all_kinds, k) {
    auto ex = make(k);
    test_reactor reactor(*ex);
    ex->start();
    std::string body;
    std::atomic<bool> all_on_job_thread{true};
    std::thread::id job_thread;
    std::atomic<m0::completion_port*> port{nullptr};
    bool completed = false;
    reactor.lane->submit(make_deferred_job(
        [&](m0::completion_port& p) {
            job_thread = std::this_thread::get_id();
            port.store(&p);
        },
        [&](bool) { completed = true; }));
    const bool offered = reactor.lane->post_fn_to_job([] {});
    if (k == kind::pool || k == kind::condvar) {  // blocking pools
        BOOST_TEST(!offered);
        BOOST_REQUIRE(reactor.run_until([&] { return port.load() != nullptr; }, 10s));
        port.load()->finish();
        BOOST_REQUIRE(reactor.drain(10s));
        ex->stop();
        return;
    }
    BOOST_TEST(offered);
    for (std::string chunk : {"he", "ll", "o"})
        reactor.lane->post_fn_to_job([&, chunk] {
            if (std::this_thread::get_id() != job_thread) all_on_job_thread = false;
            body += chunk;
        });
    reactor.lane->post_fn_to_job([&] {
        if (std::this_thread::get_id() != job_thread) all_on_job_thread = false;
        body += " (client gone)";
        port.load()->finish();  // the job ends when it learns the client left
    });
    BOOST_REQUIRE(reactor.drain(10s));
    BOOST_TEST(completed);
    BOOST_TEST(body == "hello (client gone)");
    BOOST_TEST(all_on_job_thread.load());
    ex->stop();
}

// A plain job still finishes when run() returns, on every executor.
BOOST_DATA_TEST_CASE(a_blocking_job_finishes_when_run_returns, all_kinds, k) {
    auto ex = make(k);
    test_reactor reactor(*ex);
    ex->start();
    int completed = 0;
    for (int i = 0; i < 100; ++i) reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool) { ++completed; }));
    BOOST_REQUIRE(reactor.drain(10s));
    BOOST_TEST(completed == 100);
    ex->stop();
}

// A pass that skips its poll (the one after a pass that polled) still
// serves the io_context: a handler posted from another thread while jobs
// complete runs, and so does one posted by a completion, without waiting
// for an unrelated wake.
BOOST_DATA_TEST_CASE(a_pass_that_skips_its_poll_still_runs_handlers, all_kinds, k) {
    auto ex = make(k);
    test_reactor reactor(*ex);
    ex->start();
    for (int round = 0; round < 200; ++round) {
        bool from_completion = false;
        std::atomic<bool> from_thread{false};
        reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool) {
            boost::asio::post(reactor.io, [&] { from_completion = true; });
        }));
        std::thread poster([&] { boost::asio::post(reactor.io, [&] { from_thread = true; }); });
        poster.join();
        BOOST_REQUIRE(reactor.run_until(
            [&] { return from_completion && from_thread.load() && reactor.lane->jobs_in_flight() == 0; }, 10s));
    }
    ex->stop();
}

// Lanes and wakers outlive the reactor: a reactor that leaves (and frees its
// end) as soon as its last job completed must not be touched afterwards by
// the executor thread still finishing the push that completed it. Run under
// ASan and TSan; many rounds, each a fresh reactor freed at once.
BOOST_DATA_TEST_CASE(a_reactor_may_leave_the_moment_its_last_job_completes, all_kinds, k) {
    auto ex = make(k);
    ex->start();
    // (A pool keeps at most 256 lanes for its life.)
    for (int round = 0; round < 250; ++round) {
        auto reactor = std::make_unique<test_reactor>(*ex);
        int completed = 0;
        reactor->lane->submit(make_job([](m0::completion_port& port) { port.post_fn([] {}); },
                                       [&](bool) { ++completed; }));
        reactor->lane->submit(make_deferred_job(
            [](m0::completion_port& port) {
                port.post_fn([] {});
                port.finish();
            },
            [&](bool) { ++completed; }));
        BOOST_REQUIRE(reactor->drain(10s));
        BOOST_REQUIRE_EQUAL(completed, 2);
        reactor.reset();
    }
    ex->stop();
}

#ifndef M0_CONTRACT_ASYNCIO
// stop(grace) leaves a thread stuck in a job behind instead of waiting for
// it, and says how many; the executor stays usable for that thread.
#ifdef M0_CONTRACT_CONDVAR
BOOST_AUTO_TEST_CASE(condvar_stop_leaves_a_stuck_thread_after_the_grace) {
    // Destroyed before the thread returns: the thread keeps what it uses.
    auto owned = std::make_unique<condvar_executor>(2);
    auto& ex = *owned;
#else
BOOST_AUTO_TEST_CASE(pool_stop_leaves_a_stuck_thread_after_the_grace) {
    m0::pool::pool_options o;
    o.threads = o.max_threads = 2;
    m0::pool::pool_executor ex(o);
#endif
    auto reactor = std::make_unique<test_reactor>(ex);
    ex.start();
    std::promise<void> entered;
    auto release = std::make_shared<std::promise<void>>();
    auto released = release->get_future().share();
    reactor->lane->submit(make_job(
        [&entered, released](m0::completion_port&) {
            entered.set_value();
            released.wait();  // application code that does not return
        },
        [](bool) {}));
    entered.get_future().wait();
    BOOST_TEST(ex.stop(50ms) == 1u);
    BOOST_TEST(ex.stop(50ms) == 1u);  // idempotent
    // The abandoned reactor is gone; the thread finishing later touches only
    // what the executor kept for it. (Kept reachable, not leaked, so the
    // leak checker does not count it.)
    static std::vector<std::unique_ptr<test_reactor>> abandoned;
    abandoned.push_back(std::move(reactor));
#ifdef M0_CONTRACT_CONDVAR
    owned.reset();  // the executor object goes before its stuck thread returns
#endif
    release->set_value();
#ifdef M0_CONTRACT_CONDVAR
    // The thread returns into what it kept: its job's completion reaches the
    // lane, whose reactor (kept above) still runs it, and the job is freed.
    BOOST_TEST(abandoned.back()->drain(10s));
#endif
}
#endif
