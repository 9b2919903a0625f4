// The pool's write-off (executor::write_off, the request deadline's hook): a
// thread stuck in a job stops counting, a replacement serves the queue while
// it is stuck, its job still completes once when it returns, and it leaves;
// racing write-offs against jobs that return lose and duplicate nothing
// (label tsan).
#define BOOST_TEST_MODULE pool_write_off
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <atomic>
#include <future>
#include <random>
#include <vector>

#include "test_reactor.hpp"

using namespace m0::pool;
using namespace m0::pool::test;
namespace bdata = boost::unit_test::data;

namespace {
const auto ring_kinds = bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none});
}  // namespace

BOOST_DATA_TEST_CASE(a_written_off_thread_is_replaced_and_leaves_after_its_job, ring_kinds, ring) {
    pool_options o;
    o.threads = o.max_threads = 1;
    o.ring = ring;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();

    std::promise<void> gate;
    std::shared_future<void> open = gate.get_future().share();
    std::promise<long> stuck_tid;
    int stuck_completed = 0, next_completed = 0;
    reactor.lane->submit(make_job(
        [&, open](m0::completion_port&) {
            stuck_tid.set_value(::gettid());
            open.wait_for(30s);
        },
        [&](bool cancelled) { stuck_completed += cancelled ? 100 : 1; }));
    const long tid = stuck_tid.get_future().get();
    // One thread, stuck: the next job waits behind it.
    std::promise<void> next_ran;
    reactor.lane->submit(make_job([&](m0::completion_port&) { next_ran.set_value(); },
                                  [&](bool cancelled) { next_completed += cancelled ? 100 : 1; }));
    BOOST_TEST(!ex.write_off(0));
    BOOST_TEST(!ex.write_off(::gettid()));  // no pool thread
    BOOST_REQUIRE(ex.write_off(tid));
    BOOST_TEST(!ex.write_off(tid));  // once
    // The replacement takes the queued job while the stuck one still runs.
    BOOST_REQUIRE(next_ran.get_future().wait_for(30s) == std::future_status::ready);
    BOOST_REQUIRE(reactor.run_until([&] { return next_completed == 1; }, 30s));
    auto st = ex.stats();
    BOOST_TEST(*st.threads == 1u);
    BOOST_TEST(*st.threads_written_off == 1u);
    BOOST_TEST(stuck_completed == 0);

    // Back from its job: completed once, and gone.
    gate.set_value();
    BOOST_REQUIRE(reactor.drain(30s));
    BOOST_TEST(stuck_completed == 1);
    BOOST_REQUIRE(eventually([&] { return ex.stats().threads_written_off == 0u; }, 30s));
    BOOST_TEST(*ex.stats().threads == 1u);
    // The pool serves on with its one thread.
    int later = 0;
    reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool c) { later += c ? 100 : 1; }));
    BOOST_REQUIRE(reactor.drain(30s));
    BOOST_TEST(later == 1);
    ex.stop();
}

// Write-offs aimed at threads whose jobs are returning at that moment: the
// thread written off may already be in its next job (the core's own lock
// prevents that; the pool must stay sound without it). Every job completes
// exactly once, and the pool ends with its threads and none written off.
BOOST_DATA_TEST_CASE(write_offs_racing_returning_jobs_lose_nothing, ring_kinds, ring) {
    pool_options o;
    o.threads = o.max_threads = 2;
    o.ring = ring;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    constexpr int jobs = 300;
    std::atomic<long> last_tid{0};
    std::atomic<bool> done{false};
    std::vector<int> completed(jobs, 0);
    std::thread shooter([&] {
        std::minstd_rand rng(7);
        while (!done.load()) {
            if (const long tid = last_tid.load()) ex.write_off(tid);
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
        }
    });
    for (int i = 0; i < jobs; ++i) {
        reactor.lane->submit(make_job(
            [&, i](m0::completion_port&) {
                last_tid.store(::gettid());
                const auto until = clock_type::now() + std::chrono::microseconds(50 + (i * 37) % 300);
                while (clock_type::now() < until) {
                }
            },
            [&, i](bool cancelled) { completed[i] += cancelled ? 100 : 1; }));
        if (i % 16 == 0) reactor.lane->poll_completions();
    }
    BOOST_REQUIRE(reactor.drain(60s));
    done.store(true);
    shooter.join();
    for (int i = 0; i < jobs; ++i) BOOST_TEST(completed[i] == 1, "job " << i);
    BOOST_REQUIRE(eventually([&] { return ex.stats().threads_written_off == 0u; }, 30s));
    BOOST_TEST(*ex.stats().threads == 2u);
    ex.stop();
}
