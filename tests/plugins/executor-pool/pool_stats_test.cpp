// The pool's executor::stats(): busy and parked threads, queue depth, jobs
// done and queue wait, read from another thread while jobs hold every pool
// thread (label tsan: the reads race with nothing).
#define BOOST_TEST_MODULE pool_stats
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <future>
#include <numeric>

#include "test_reactor.hpp"

using namespace m0::pool;
using namespace m0::pool::test;
namespace bdata = boost::unit_test::data;

namespace {

std::uint64_t waits(const m0::executor_stats& st) {
    const auto& b = st.queue_wait->buckets;
    return std::accumulate(b.begin(), b.end(), std::uint64_t{0});
}

}  // namespace

BOOST_DATA_TEST_CASE(stats_follow_jobs_that_hold_every_thread,
                     bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none}), ring) {
    pool_options o;
    o.threads = o.max_threads = 2;
    o.ring = ring;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    BOOST_REQUIRE(eventually([&] { return ex.stats().threads_parked == 2u; }, 10s));
    auto idle = ex.stats();
    BOOST_TEST(*idle.threads == 2u);
    BOOST_TEST(*idle.threads_busy == 0u);
    BOOST_TEST(*idle.queue_depth == 0u);
    BOOST_TEST(*idle.jobs_done == 0u);

    std::promise<void> gate;
    std::shared_future<void> open = gate.get_future().share();
    int completed = 0;
    for (int i = 0; i < 3; ++i)
        reactor.lane->submit(make_job([open](m0::completion_port&) { open.wait_for(30s); },
                                      [&](bool) { ++completed; }));
    // Two jobs hold both threads; the third waits in the queue.
    std::promise<m0::executor_stats> seen;
    std::thread reader([&] {
        m0::executor_stats st;
        eventually([&] {
            st = ex.stats();
            return st.threads_busy == 2u && st.queue_depth == 1u && waits(st) == 2u;
        }, 10s);
        seen.set_value(st);
    });
    reader.join();
    const auto busy = seen.get_future().get();
    BOOST_TEST(*busy.threads_busy == 2u);
    BOOST_TEST(*busy.queue_depth == 1u);
    BOOST_TEST(*busy.threads_parked == 0u);
    BOOST_TEST(waits(busy) == 2u);  // the two running jobs were taken

    gate.set_value();
    BOOST_REQUIRE(reactor.drain(30s));
    BOOST_TEST(completed == 3);
    const auto done = ex.stats();
    BOOST_TEST(*done.jobs_done == 3u);
    BOOST_TEST(*done.queue_depth == 0u);
    BOOST_TEST(waits(done) == 3u);
    BOOST_TEST(done.queue_wait->sum_ns > 0u);
    BOOST_TEST(!done.loop_lag.has_value());
    ex.stop();
}
