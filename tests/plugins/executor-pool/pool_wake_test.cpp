// The pool's wake protocol: no job and no completion is ever stranded
// behind a parked thread or a waiting reactor.
#define BOOST_TEST_MODULE pool_wake
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <random>
#include <vector>

#include "test_reactor.hpp"

using namespace m0::pool;
using namespace m0::pool::test;
namespace bdata = boost::unit_test::data;

namespace {

// The age check is a safety net that would hide a lost wake: push it out of
// reach so these tests see the protocol alone.
pool_options no_safety_net(ring_kind ring, unsigned threads) {
    pool_options o;
    o.threads = o.max_threads = threads;
    o.ring = ring;
    o.max_job_age = std::chrono::hours(1);
    return o;
}

// One job at a time: each submitted only once the pool thread has parked;
// its completion must reach the (blocked) reactor within 2 s.
void run_parked_jobs(pool_options o, unsigned jobs) {
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    for (unsigned i = 0; i < jobs; ++i) {
        BOOST_REQUIRE_MESSAGE(eventually([&] { return ex.parked_threads() == 1; }, 2s),
                              "pool thread never parked before job " << i);
        bool done = false;
        reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool) { done = true; }));
        BOOST_REQUIRE_MESSAGE(reactor.run_until([&] { return done; }, 2s),
                              "job " << i << " of " << jobs << " lost its wake");
    }
    ex.stop();
}

}  // namespace

BOOST_DATA_TEST_CASE(lost_wakeup_job_after_park, bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none}),
                     ring) {
    run_parked_jobs(no_safety_net(ring, 1), 200);
}

// Same, with a 1 ms pause between announcing and re-checking on both sides:
// a job lands between the pool thread's announce and its re-check, and a
// completion between the reactor's announce and its re-check.
BOOST_DATA_TEST_CASE(lost_wakeup_job_inside_park_window, bdata::make({ring_kind::vyukov, ring_kind::lockfree}),
                     ring) {
    auto o = no_safety_net(ring, 1);
    o.test_park_window = 1ms;
    run_parked_jobs(o, 200);
}

// Jobs submitted at random instants around the moment the pool thread goes
// idle (0..3 ms after the previous completion, with a 2 ms announce/re-check
// window and no spin): they hit every phase of the park sequence.
BOOST_DATA_TEST_CASE(lost_wakeup_racing_submits, bdata::make({ring_kind::vyukov, ring_kind::lockfree}), ring) {
    auto o = no_safety_net(ring, 1);
    o.spin = std::chrono::nanoseconds(0);
    o.test_park_window = 2ms;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> delay_us(0, 3000);
    for (unsigned i = 0; i < 200; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
        bool done = false;
        reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool) { done = true; }));
        BOOST_REQUIRE_MESSAGE(reactor.run_until([&] { return done; }, 2s), "job " << i << " lost its wake");
    }
    ex.stop();
}

// N parked threads, a burst of N jobs: all N must run at the same time,
// which only happens if the burst woke every one of them.
BOOST_DATA_TEST_CASE(chained_wake_burst_runs_concurrently,
                     bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none}), ring) {
    constexpr unsigned n = 4;
    pool_executor ex(no_safety_net(ring, n));
    test_reactor reactor(ex);
    ex.start();
    for (int round = 0; round < 5; ++round) {
        BOOST_REQUIRE(eventually([&] { return ex.parked_threads() == n; }, 2s));
        timed_barrier barrier(n);
        std::atomic<unsigned> met{0};
        unsigned completed = 0;
        for (unsigned i = 0; i < n; ++i)
            reactor.lane->submit(make_job(
                [&](m0::completion_port&) {
                    if (barrier.arrive_and_wait(5s)) met.fetch_add(1);
                },
                [&](bool) { ++completed; }));
        BOOST_REQUIRE(reactor.run_until([&] { return completed == n; }, 20s));
        BOOST_TEST(met.load() == n, "round " << round << ": only " << met.load() << " of " << n
                                             << " jobs ran concurrently");
    }
    ex.stop();
}
