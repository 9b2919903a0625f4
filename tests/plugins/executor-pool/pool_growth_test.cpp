// growth: blocked — the governor's rule fed synthetic windows, the probe it
// reads, and a pool that grows for jobs blocked outside the CPU and not for
// jobs that compute (label tsan: the governor reads the threads' counters
// and probes while they run).
#define BOOST_TEST_MODULE pool_growth
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstring>
#include <ctime>
#include <fstream>

#include "demand_probe.hpp"
#include "growth_rule.hpp"
#include "test_reactor.hpp"

using namespace m0::pool;
using namespace m0::pool::test;
namespace bdata = boost::unit_test::data;

namespace m0::pool {
// Names the source in data-driven test case names.
inline std::ostream& operator<<(std::ostream& os, demand_probe::source s) {
    using enum demand_probe::source;
    return os << (s == schedstat ? "schedstat" : s == cpu_clock ? "cpu_clock" : "none");
}
}  // namespace m0::pool

namespace {

growth_sample window(double demand, unsigned busy, unsigned live, std::uint64_t queued, unsigned max = 32) {
    growth_sample s;
    s.demand = demand;
    s.busy = busy;
    s.live = live;
    s.max = max;
    s.queued = queued;
    s.sustained = true;
    return s;
}

std::int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

pool_options blocked_pool(ring_kind ring) {
    pool_options o;
    o.threads = 1;
    o.max_threads = default_blocked_max_threads;
    o.growth = growth_kind::blocked;
    o.ring = ring;
    return o;
}

const auto ring_kinds = bdata::make({ring_kind::vyukov, ring_kind::none});

}  // namespace

// Threads blocked outside the interpreter: as many threads as jobs wait,
// within the bound.
BOOST_AUTO_TEST_CASE(blocked_threads_grow_by_the_jobs_waiting) {
    BOOST_TEST(threads_to_add(window(0.0, 1, 1, 7)) == 7u);
    BOOST_TEST(threads_to_add(window(0.02, 8, 8, 100)) == 24u);  // the bound: 32 - 8
    BOOST_TEST(threads_to_add(window(0.0, 1, 1, 7, 4)) == 3u);
}

// Computing threads, or threads queued for the GIL, add up to a core: the
// convoy, where another thread only queues with them.
BOOST_AUTO_TEST_CASE(saturated_demand_never_grows) {
    for (const double d : {0.75, 0.9, 1.0, 1.4, 3.0})
        for (const unsigned busy : {1u, 2u, 8u}) BOOST_TEST(threads_to_add(window(d, busy, busy, 63)) == 0u, d);
}

// In between: as many as the GIL has room for at the threads' average
// demand, at least one.
BOOST_AUTO_TEST_CASE(partial_demand_grows_by_the_room_left) {
    BOOST_TEST(threads_to_add(window(0.25, 5, 5, 63)) == 10u);  // (0.75 - 0.25) / 0.05
    BOOST_TEST(threads_to_add(window(0.25, 5, 5, 3)) == 3u);    // fewer jobs than room
    BOOST_TEST(threads_to_add(window(0.7, 1, 1, 63)) == 1u);    // room for less than one: one
}

BOOST_AUTO_TEST_CASE(no_pressure_no_growth) {
    auto s = window(0.0, 1, 1, 7);
    s.sustained = false;  // a thread went idle during the window
    BOOST_TEST(threads_to_add(s) == 0u);
    BOOST_TEST(threads_to_add(window(0.0, 1, 1, 0)) == 0u);       // nothing waits
    BOOST_TEST(threads_to_add(window(0.0, 32, 32, 9)) == 0u);     // at the bound
}

BOOST_AUTO_TEST_CASE(schedstat_is_parsed_as_run_plus_wait) {
    const char text[] = "123456789 1000 42\n";
    BOOST_TEST(demand_probe::parse_schedstat(text, std::strlen(text)).value() == 123457789u);
    BOOST_TEST(!demand_probe::parse_schedstat("x", 1).has_value());
    BOOST_TEST(!demand_probe::parse_schedstat("12", 2).has_value());
}

// A thread that computes shows a demand that grows with its work, and is
// runnable while it computes, read from another thread.
// Both sources: schedstat, and the thread's CPU clock of a kernel without it.
BOOST_DATA_TEST_CASE(a_computing_thread_shows_its_demand,
                     bdata::make({demand_probe::source::schedstat, demand_probe::source::cpu_clock}), source) {
    demand_probe probe;
    std::atomic<int> step{0};
    std::thread t([&] {
        probe.open_for_this_thread(source);
        step = 1;
        while (step.load() != 2) {
        }
        // 20 ms on a CPU (not of wall time: on a busy machine it also waits).
        const auto until = thread_cpu_ns() + 20'000'000;
        while (thread_cpu_ns() < until) {
        }
        step = 3;
        for (int seen = 3; seen != 4; seen = step.load()) step.wait(seen);  // a futex wait: asleep
    });
    while (step.load() != 1) std::this_thread::yield();
    if (source == demand_probe::source::cpu_clock)
        BOOST_TEST((probe.kind() == demand_probe::source::cpu_clock));
    else
        BOOST_TEST((probe.kind() != demand_probe::source::none));
    const auto before = probe.demand_ns();
    BOOST_REQUIRE(before.has_value());
    step = 2;
    if (std::ifstream("/proc/thread-self/stat")) BOOST_TEST(probe.runnable());  // spinning until step 3
    while (step.load() != 3) std::this_thread::yield();
    const auto after = probe.demand_ns();
    BOOST_REQUIRE(after.has_value());
    if (std::ifstream("/proc/thread-self/stat"))
        BOOST_TEST(eventually([&] { return !probe.runnable(); }, 10s));  // asleep in step.wait
    // It computed 20 ms; schedstat adds a running thread's time at its
    // ticks, so up to one tick (10 ms at HZ=100) may not show yet.
    BOOST_TEST(*after >= *before + 10'000'000u, *after - *before);
    step = 4;
    step.notify_all();
    t.join();
}

// Eight jobs that each wait for the others (blocked, not computing) all run
// at once: the pool grew from one thread to at least eight.
BOOST_DATA_TEST_CASE(jobs_blocked_together_grow_the_pool, ring_kinds, ring) {
    pool_executor ex(blocked_pool(ring));
    test_reactor reactor(ex);
    ex.start();
    BOOST_TEST(ex.live_threads() == 1u);
    constexpr unsigned jobs = 8;
    timed_barrier all_in(jobs);
    std::atomic<unsigned> met{0};
    unsigned completed = 0;
    for (unsigned i = 0; i < jobs; ++i)
        reactor.lane->submit(make_job([&](m0::completion_port&) { met += all_in.arrive_and_wait(30s); },
                                      [&](bool) { ++completed; }));
    BOOST_REQUIRE(reactor.run_until([&] { return completed == jobs; }, 60s));
    BOOST_TEST(met.load() == jobs, "all eight jobs were inside at once");
    BOOST_TEST(ex.live_threads() >= jobs);
    BOOST_TEST(ex.live_threads() <= default_blocked_max_threads);
    ex.stop();
}

// Jobs that compute keep a core's worth of demand: the pool stays at one
// thread however many wait (on a machine with cores to spare, too: it is
// CPU work the pool does not spread; more processes do).
BOOST_DATA_TEST_CASE(jobs_that_compute_do_not_grow_the_pool, ring_kinds, ring) {
    pool_executor ex(blocked_pool(ring));
    test_reactor reactor(ex);
    ex.start();
    constexpr unsigned jobs = 12;
    std::atomic<unsigned> most_live{0};
    unsigned completed = 0;
    for (unsigned i = 0; i < jobs; ++i)
        reactor.lane->submit(make_job(
            [&](m0::completion_port&) {
                const auto until = clock_type::now() + 25ms;
                while (clock_type::now() < until) most_live = std::max(most_live.load(), ex.live_threads());
            },
            [&](bool) { ++completed; }));
    BOOST_REQUIRE(reactor.run_until([&] { return completed == jobs; }, 60s));
    BOOST_TEST(most_live.load() == 1u);
    BOOST_TEST(ex.live_threads() == 1u);
    ex.stop();
}

// threads_blocked is reported in this mode, and only counts busy threads.
BOOST_AUTO_TEST_CASE(stats_report_the_bound_and_blocked_threads) {
    pool_executor ex(blocked_pool(ring_kind::vyukov));
    const auto st = ex.stats();
    BOOST_TEST(st.threads_max.value() == default_blocked_max_threads);
    BOOST_TEST(st.threads_blocked.value() == 0u);
    pool_options eager;
    eager.threads = 2;
    eager.max_threads = 3;
    pool_executor ex2(eager);
    BOOST_TEST(ex2.stats().threads_max.value() == 3u);
    BOOST_TEST(!ex2.stats().threads_blocked.has_value());
}
