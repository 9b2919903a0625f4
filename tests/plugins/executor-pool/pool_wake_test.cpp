// The pool's wake protocol: no job and no completion is ever stranded
// behind a parked thread or a waiting reactor.
#define BOOST_TEST_MODULE pool_wake
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
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

// One thread that grows to two for jobs that need it, and an extra thread
// that leaves after `idle` parked.
pool_options growing_to_two(ring_kind ring, std::chrono::nanoseconds idle) {
    auto o = no_safety_net(ring, 1);
    o.max_threads = 2;
    o.idle_timeout = idle;
    return o;
}

// Submits an empty job; true once its completion reached the reactor
// (blocked in between), false if that took over 2 s: the job lost its wake.
bool one_job_completes(test_reactor& reactor) {
    bool done = false;
    reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool) { done = true; }));
    return reactor.run_until([&] { return done; }, 2s);
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
        BOOST_REQUIRE_MESSAGE(one_job_completes(reactor), "job " << i << " of " << jobs << " lost its wake");
    }
    ex.stop();
}

// Two jobs that wait for each other (up to `meet`): true if they ran at the
// same time, which on a pool of one thread means it grew (or a second
// thread was woken) for the second job.
bool pair_runs_together(test_reactor& reactor, std::chrono::nanoseconds meet) {
    timed_barrier both(2);
    std::atomic<unsigned> met{0};
    unsigned completed = 0;
    for (int k = 0; k < 2; ++k)
        reactor.lane->submit(
            make_job([&](m0::completion_port&) { met += both.arrive_and_wait(meet); }, [&](bool) { ++completed; }));
    BOOST_REQUIRE(reactor.run_until([&] { return completed == 2; }, meet + 8s));
    return met.load() == 2u;
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
        BOOST_REQUIRE_MESSAGE(one_job_completes(reactor), "job " << i << " lost its wake");
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

// A submit's wake racing a thread's idle timeout: the pool has grown to two
// threads, both park, and a job arrives at a random instant around the end
// of the extra thread's idle_timeout (widened by test_park_window). If the
// wake claims the thread after its wait timed out, the thread must run, not
// retire: the wake was spent on it, and the other thread sleeps on (no age
// check here), so a retiring thread would strand the job.
BOOST_DATA_TEST_CASE(wake_racing_the_idle_timeout, bdata::make({ring_kind::vyukov, ring_kind::lockfree}), ring) {
    auto o = growing_to_two(ring, 1ms);
    o.test_park_window = 1ms;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    std::mt19937 rng(4242);
    for (unsigned i = 0; i < 100; ++i) {
        // Two jobs that wait for each other: the pool grows to two threads.
        BOOST_REQUIRE_MESSAGE(pair_runs_together(reactor, 5s),
                              "round " << i << ": the two jobs never ran together (a lost wake, or no growth)");
        // 0..4 ms: around the 1 ms timeout and the 1 ms window after it.
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 4000));
        BOOST_REQUIRE_MESSAGE(one_job_completes(reactor), "round " << i << ": the job lost its wake");
    }
    ex.stop();
}

// A thread leaving after its idle timeout is on its way out for as long as
// its on_stop hooks take (the WSGI frontend's takes the GIL). Pairs of jobs
// that must run together arrive at random instants around that departure:
// the pair needs a second thread, so the leaving one must either come back
// for the job or count as gone, so that the push grows the pool. Counted as
// idle to the end, it made the push neither wake nor grow, and the second
// job waited for the first to finish (here: never, until the barrier gave up).
BOOST_DATA_TEST_CASE(leaving_thread_strands_no_job,
                     bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none}), ring) {
    pool_executor ex(growing_to_two(ring, 1ms));
    // Slow per-thread teardown: the departure window is 3 ms wide.
    ex.add_thread_hooks(m0::thread_hooks{{}, [] { std::this_thread::sleep_for(3ms); }, {}});
    test_reactor reactor(ex);
    ex.start();
    std::mt19937 rng(99);
    for (unsigned i = 0; i < 60; ++i) {
        BOOST_REQUIRE_MESSAGE(pair_runs_together(reactor, 2s),
                              "round " << i << ": the second job waited for the first (stranded)");
        // 0..6 ms: the extra thread times out after 1 ms, then spends 3 ms leaving.
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 6000));
    }
    ex.stop();
}

// stop() racing submits that wake parked threads: every job runs or is
// cancelled, exactly once, and stop() joins every thread (a thread left
// parked would be reported as abandoned after the grace).
BOOST_DATA_TEST_CASE(wake_racing_stop, bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none}), ring) {
    std::mt19937 rng(777);
    std::uniform_int_distribution<int> jobs_before(0, 8);
    for (int round = 0; round < 30; ++round) {
        auto o = no_safety_net(ring, 3);
        o.test_park_window = 100us;
        pool_executor ex(o);
        test_reactor reactor(ex);
        ex.start();
        BOOST_REQUIRE(eventually([&] { return ex.parked_threads() == 3; }, 5s));
        constexpr unsigned jobs = 16;
        std::vector<int> completions(jobs, 0);
        std::vector<std::atomic<int>> runs(jobs);
        const unsigned before = static_cast<unsigned>(jobs_before(rng));
        auto submit = [&](unsigned i) {
            reactor.lane->submit(make_job([&, i](m0::completion_port&) { runs[i].fetch_add(1); },
                                          [&, i](bool cancelled) { completions[i] += 1 + (cancelled ? 10 : 0); }));
        };
        for (unsigned i = 0; i < before; ++i) submit(i);
        auto stopper = std::async(std::launch::async, [&] { return ex.stop(10s); });
        for (unsigned i = before; i < jobs; ++i) submit(i);
        BOOST_REQUIRE_MESSAGE(reactor.drain(20s), "round " << round << ": jobs left in flight");
        BOOST_TEST(stopper.get() == 0u, "round " << round << ": threads left behind by stop()");
        BOOST_TEST(ex.live_threads() == 0u);
        for (unsigned i = 0; i < jobs; ++i) {
            // 1: ran and completed; 11: cancelled (and not run).
            BOOST_REQUIRE_EQUAL(completions[i], runs[i].load() == 1 ? 1 : 11);
            BOOST_REQUIRE_LE(runs[i].load(), 1);
        }
    }
}
