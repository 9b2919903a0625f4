// The pool as an m0::executor: backpressure, partial completions, thread
// hooks and names, the scheduling policy, shutdown, elastic sizing, the
// adaptive reactor spin.
#define BOOST_TEST_MODULE pool_executor
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pool_lane.hpp"
#include "test_reactor.hpp"

using namespace m0::pool;
using namespace m0::pool::test;
namespace bdata = boost::unit_test::data;

namespace {

pool_options options_for(ring_kind ring, unsigned threads) {
    pool_options o;
    o.threads = o.max_threads = threads;
    o.ring = ring;
    return o;
}

const auto ring_kinds = bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none});

// The cores the calling thread may run on.
cpu_set_t cores_of_this_thread() {
    cpu_set_t cores;
    CPU_ZERO(&cores);
    pthread_getaffinity_np(pthread_self(), sizeof cores, &cores);
    return cores;
}

// Runs body(reactor) on a thread pinned to `core`, acting as a reactor of
// `ex`; true if the pin held and body returned true.
template <class Body>
bool on_pinned_reactor(pool_executor& ex, const cpu_set_t& core, Body body) {
    bool ok = false;
    std::thread t([&] {
        const bool pinned = pthread_setaffinity_np(pthread_self(), sizeof core, &core) == 0;
        test_reactor reactor(ex);
        ok = body(reactor) && pinned;
    });
    t.join();
    return ok;
}

// The highest-numbered core of `cores`, alone: where a test pins its reactor.
cpu_set_t last_core_of(const cpu_set_t& cores) {
    int last = 0;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &cores)) last = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    return one;
}

}  // namespace

// The cores each job ran on, recorded by the jobs. Outside the anonymous
// namespace: the data test cases' lambdas capture it (-Wsubobject-linkage).
namespace m0::pool::test {
struct cores_seen {
    void record() {
        const cpu_set_t mine = cores_of_this_thread();
        std::lock_guard lock(mutex);
        seen.push_back(mine);
    }
    std::size_t count() {
        std::lock_guard lock(mutex);
        return seen.size();
    }
    std::mutex mutex;
    std::vector<cpu_set_t> seen;
};
}  // namespace m0::pool::test

// 1000 jobs into rings of 4, in one go: none is dropped, each completes once.
BOOST_DATA_TEST_CASE(full_ring_keeps_every_job, ring_kinds, ring) {
    auto o = options_for(ring, 2);
    o.ring_capacity = 4;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    constexpr unsigned jobs = 1000;
    std::vector<int> ran(jobs, 0), completed(jobs, 0);
    std::vector<std::atomic<int>> runs(jobs);
    for (unsigned i = 0; i < jobs; ++i)
        reactor.lane->submit(make_job([&, i](m0::completion_port& port) {
            runs[i].fetch_add(1);
            port.post_fn([&, i] { ++ran[i]; });  // partial results need completion room too
        }, [&, i](bool cancelled) { completed[i] += cancelled ? 100 : 1; }));
    BOOST_TEST(reactor.lane->jobs_in_flight() == jobs);
    BOOST_REQUIRE(reactor.drain(30s));
    for (unsigned i = 0; i < jobs; ++i) {
        BOOST_REQUIRE_EQUAL(runs[i].load(), 1);
        BOOST_REQUIRE_EQUAL(ran[i], 1);
        BOOST_REQUIRE_EQUAL(completed[i], 1);
    }
    ex.stop();
}

// Partial results run on the reactor, in the order posted, before complete().
BOOST_DATA_TEST_CASE(partial_completions_in_order_before_complete, ring_kinds, ring) {
    pool_executor ex(options_for(ring, 2));
    test_reactor reactor(ex);
    ex.start();
    const auto reactor_id = std::this_thread::get_id();
    constexpr int jobs = 50, parts = 20;
    std::vector<std::vector<int>> seen(jobs);
    bool wrong_thread = false;
    for (int j = 0; j < jobs; ++j)
        reactor.lane->submit(make_job(
            [&, j](m0::completion_port& port) {
                for (int p = 0; p < parts; ++p)
                    port.post_fn([&, j, p] {
                        wrong_thread |= std::this_thread::get_id() != reactor_id;
                        seen[j].push_back(p);
                    });
            },
            [&, j](bool cancelled) {
                wrong_thread |= std::this_thread::get_id() != reactor_id;
                seen[j].push_back(cancelled ? -2 : -1);
            }));
    BOOST_REQUIRE(reactor.drain(10s));
    std::vector<int> expected;
    for (int p = 0; p < parts; ++p) expected.push_back(p);
    expected.push_back(-1);
    for (int j = 0; j < jobs; ++j) BOOST_TEST(seen[j] == expected, "job " << j);
    BOOST_TEST(!wrong_thread);
    ex.stop();
}

// Hooks run once per pool thread, on that thread, before its first job; the
// thread carries its m0-pool-N name.
BOOST_AUTO_TEST_CASE(thread_hooks_and_names) {
    pool_executor ex(options_for(ring_kind::vyukov, 3));
    thread_local bool started_here = false;
    std::atomic<int> starts{0}, stops{0};
    ex.add_thread_hooks({[&] { started_here = true; starts.fetch_add(1); }, [&] { stops.fetch_add(1); }});
    test_reactor reactor(ex);
    ex.start();
    std::mutex mutex;
    std::set<std::string> names;
    bool all_started = true;
    for (int i = 0; i < 200; ++i)
        reactor.lane->submit(make_job(
            [&](m0::completion_port&) {
                char name[16] = {};
                pthread_getname_np(pthread_self(), name, sizeof name);
                std::lock_guard lock(mutex);
                names.insert(name);
                all_started &= started_here;
            },
            [](bool) {}));
    BOOST_REQUIRE(reactor.drain(10s));
    ex.stop();
    BOOST_TEST(all_started);
    BOOST_TEST(starts.load() == 3);
    BOOST_TEST(stops.load() == 3);
    for (const auto& n : names) BOOST_TEST(n.rfind("m0-pool-", 0) == 0, n);
}

// on_idle runs on the pool thread before it waits for work, never between
// jobs it takes back to back: a frontend that keeps the GIL from one job to
// the next gives it up there, so a parked thread holds nothing.
BOOST_DATA_TEST_CASE(idle_hook_runs_before_a_wait_never_between_jobs_back_to_back, ring_kinds, ring) {
    pool_executor ex(options_for(ring, 1));
    std::atomic<int> idles{0};
    std::atomic<bool> idle_off_thread{false};
    thread_local bool pool_thread = false;
    ex.add_thread_hooks({[] { pool_thread = true; }, [] {}, [&] {
                             idle_off_thread = idle_off_thread || !pool_thread;
                             idles.fetch_add(1);
                         }});
    test_reactor reactor(ex);
    ex.start();
    BOOST_REQUIRE(eventually([&] { return ex.stats().threads_parked == 1u; }, 30s));
    BOOST_TEST(idles.load() >= 1);  // before its first park

    // A first job holds the thread while nine more queue behind it.
    std::promise<void> gate;
    auto opened = gate.get_future().share();
    constexpr int jobs = 10;
    std::vector<int> idles_seen(jobs, -1);
    for (int i = 0; i < jobs; ++i)
        reactor.lane->submit(make_job(
            [&, i](m0::completion_port&) {
                if (i == 0) opened.wait_for(30s);
                idles_seen[i] = idles.load();
            },
            [](bool) {}));
    BOOST_REQUIRE(eventually([&] { return ex.stats().threads_busy == 1u; }, 30s));
    gate.set_value();
    BOOST_REQUIRE(reactor.drain(30s));
    for (int i = 1; i < jobs; ++i) BOOST_TEST(idles_seen[i] == idles_seen[0], "job " << i);
    // Out of work again: the hook runs before the thread parks.
    BOOST_REQUIRE(eventually([&] { return ex.stats().threads_parked == 1u; }, 30s));
    BOOST_TEST(idles.load() > idles_seen[jobs - 1]);
    ex.stop();
    BOOST_TEST(!idle_off_thread.load());
}

// colocate: a job taken after the reactor's first pass runs on the reactor's
// cores (here: the last core only); without colocate on the cores the pool
// threads started with (all of this process's).
BOOST_DATA_TEST_CASE(colocate_runs_jobs_on_the_reactors_cores, bdata::make({false, true}), colocate) {
    const cpu_set_t all = cores_of_this_thread();
    const cpu_set_t reactor_core = last_core_of(all);
    auto o = options_for(ring_kind::vyukov, 2);
    o.colocate = colocate;
    pool_executor ex(o);
    ex.start();
    cores_seen cores;
    const bool drained = on_pinned_reactor(ex, reactor_core, [&](test_reactor& reactor) {
        reactor.lane->submit(make_job([](m0::completion_port&) {}, [](bool) {}));
        if (!reactor.drain(30s)) return false;  // its first pass reports the core
        for (int i = 0; i < 20; ++i)
            reactor.lane->submit(make_job([&](m0::completion_port&) { cores.record(); }, [](bool) {}));
        return reactor.drain(30s);
    });
    ex.stop();
    BOOST_REQUIRE(drained);
    BOOST_REQUIRE(cores.seen.size() == 20u);
    for (const auto& mine : cores.seen) BOOST_TEST(CPU_EQUAL(&mine, colocate ? &reactor_core : &all));
}

// A thread the pool grows from a pinned reactor does not inherit the
// reactor's core: it starts on the cores the pool was made on.
BOOST_AUTO_TEST_CASE(a_thread_grown_from_a_pinned_reactor_starts_on_the_pools_cores) {
    const cpu_set_t all = cores_of_this_thread();
    auto o = options_for(ring_kind::vyukov, 1);
    o.max_threads = 2;
    pool_executor ex(o);
    ex.start();
    std::promise<void> gate;
    auto opened = gate.get_future().share();
    cores_seen cores;
    const bool drained = on_pinned_reactor(ex, last_core_of(all), [&](test_reactor& reactor) {
        // The first job holds the one thread; the second, submitted once the
        // first runs, makes the reactor grow the pool (on_job_pushed, on this
        // pinned thread).
        reactor.lane->submit(make_job(
            [&](m0::completion_port&) {
                cores.record();
                opened.wait_for(30s);
            },
            [](bool) {}));
        if (!eventually([&] { return cores.count() == 1; }, 30s)) return false;
        reactor.lane->submit(make_job(
            [&](m0::completion_port&) {
                cores.record();
                gate.set_value();
            },
            [](bool) {}));
        return reactor.drain(30s);
    });
    ex.stop();
    BOOST_REQUIRE(drained);
    BOOST_REQUIRE(cores.seen.size() == 2u);
    for (const auto& mine : cores.seen) BOOST_TEST(CPU_EQUAL(&mine, &all));
}

// The scheduling policy of each of this process's threads named m0-pool-*,
// from /proc/self/task/<tid>/stat (field 41).
std::multiset<int> pool_thread_policies() {
    std::multiset<int> out;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm"), stat(task.path() / "stat");
        std::string name, text;
        std::getline(comm, name);
        std::getline(stat, text);
        if (name.rfind("m0-pool-", 0) != 0 || text.empty()) continue;
        std::istringstream fields(text.substr(text.rfind(')') + 2));  // from field 3 (state) on
        std::string field;
        for (int i = 3; i <= 41 && fields >> field; ++i) {}
        out.insert(std::stoi(field));
    }
    return out;
}

// batch_sched: a pool thread parks under SCHED_BATCH (a reactor's wake does
// not preempt the reactor) and runs its jobs under the default policy (a
// job's own waits, a database query say, end with a wake that preempts);
// without it the threads keep the default policy throughout.
BOOST_DATA_TEST_CASE(batch_sched_parks_under_sched_batch_and_runs_jobs_under_the_default, bdata::make({false, true}),
                     batch) {
    auto o = options_for(ring_kind::vyukov, 2);
    o.batch_sched = batch;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    std::mutex mutex;
    std::set<int> policies;
    for (int i = 0; i < 50; ++i)
        reactor.lane->submit(make_job(
            [&](m0::completion_port&) {
                int policy = -1;
                sched_param param{};
                pthread_getschedparam(pthread_self(), &policy, &param);
                std::lock_guard lock(mutex);
                policies.insert(policy);
            },
            [](bool) {}));
    BOOST_REQUIRE(reactor.drain(10s));
    BOOST_TEST((policies == std::set<int>{SCHED_OTHER}));
    // Both threads idle, parked: under SCHED_BATCH with batch_sched.
    const int parked_policy = batch ? SCHED_BATCH : SCHED_OTHER;
    BOOST_TEST(eventually([&] { return pool_thread_policies() == std::multiset<int>{parked_policy, parked_policy}; },
                          10s));
    // Woken for a job, a thread runs it under the default policy again.
    std::promise<int> ran;
    reactor.lane->submit(make_job(
        [&](m0::completion_port&) {
            int policy = -1;
            sched_param param{};
            pthread_getschedparam(pthread_self(), &policy, &param);
            ran.set_value(policy);
        },
        [](bool) {}));
    BOOST_REQUIRE(reactor.drain(10s));
    BOOST_TEST(ran.get_future().get() == SCHED_OTHER);
    ex.stop();
}

// stop() with jobs queued behind busy threads: each job either ran or was
// cancelled, each completed exactly once, on the reactor; threads joined.
BOOST_DATA_TEST_CASE(shutdown_with_queued_jobs, ring_kinds, ring) {
    pool_executor ex(options_for(ring, 2));
    test_reactor reactor(ex);
    ex.start();
    constexpr unsigned jobs = 200;
    std::atomic<bool> gate{false};
    std::atomic<unsigned> running{0};
    std::vector<std::atomic<int>> runs(jobs);
    std::vector<int> completions(jobs, 0), cancels(jobs, 0);
    unsigned cancelled_so_far = 0;
    for (unsigned i = 0; i < jobs; ++i)
        reactor.lane->submit(make_job(
            [&, i](m0::completion_port&) {
                runs[i].fetch_add(1);
                running.fetch_add(1);
                while (!gate.load()) std::this_thread::sleep_for(100us);
            },
            [&, i](bool cancelled) {
                ++completions[i];
                cancels[i] += cancelled;
                cancelled_so_far += cancelled;
            }));
    BOOST_REQUIRE(eventually([&] { return running.load() == 2; }, 5s));
    // stop() from another thread, as the server's main thread does, while
    // this reactor keeps polling. The busy threads are released once stop()
    // has begun, which the reactor sees as its queued jobs being cancelled
    // (polled without blocking: stop() wakes reactors only after joining).
    auto stopper = std::async(std::launch::async, [&] { ex.stop(); });
    const bool stop_began = eventually([&] {
        reactor.lane->poll_completions();
        return cancelled_so_far > 0;
    }, 10s);
    gate = true;  // before any REQUIRE: the stopper must be able to finish
    BOOST_REQUIRE(stop_began);
    BOOST_REQUIRE(reactor.drain(10s));
    stopper.get();
    unsigned ran = 0, cancelled = 0;
    for (unsigned i = 0; i < jobs; ++i) {
        BOOST_REQUIRE_EQUAL(completions[i], 1);
        BOOST_REQUIRE_EQUAL(runs[i].load() + cancels[i], 1);  // ran xor cancelled
        ran += runs[i].load();
        cancelled += cancels[i];
    }
    BOOST_TEST(ran >= 2u);
    BOOST_TEST(cancelled > 0u);
    BOOST_TEST(ex.live_threads() == 0u);
    ex.stop();  // idempotent

    // After stop, a new job is cancelled, not lost.
    int late = 0;
    reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool c) { late = c ? 1 : 2; }));
    BOOST_REQUIRE(reactor.drain(2s));
    BOOST_TEST(late == 1);
}

// stop() called on the reactor thread itself (no other thread polls): it
// must not wait on this reactor, and leaves the rest to be cancelled.
BOOST_DATA_TEST_CASE(shutdown_from_the_reactor_thread, ring_kinds, ring) {
    auto o = options_for(ring, 2);
    o.ring_capacity = 4;  // completions overflow while nobody polls
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    constexpr unsigned jobs = 500;
    std::vector<int> completions(jobs, 0);
    for (unsigned i = 0; i < jobs; ++i)
        reactor.lane->submit(make_job([](m0::completion_port& port) { port.post_fn([] {}); },
                                      [&, i](bool) { ++completions[i]; }));
    std::this_thread::sleep_for(5ms);
    ex.stop();
    BOOST_TEST(ex.live_threads() == 0u);
    BOOST_REQUIRE(reactor.drain(5s));
    for (unsigned i = 0; i < jobs; ++i) BOOST_REQUIRE_EQUAL(completions[i], 1);
}

// Jobs that block grow the pool to max_threads; idle threads retire after
// idle_timeout, back to `threads` and never below.
BOOST_DATA_TEST_CASE(elastic_grow_then_shrink, ring_kinds, ring) {
    pool_options o = options_for(ring, 1);
    o.max_threads = 4;
    o.idle_timeout = 300ms;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    BOOST_TEST(ex.live_threads() == 1u);

    // The thread count is read while all four jobs still block (between two
    // barriers): once a job ends, its thread may retire after idle_timeout.
    timed_barrier all_running(4), counted(4);
    std::atomic<unsigned> met{0}, live_while_running{0};
    unsigned completed = 0;
    for (int i = 0; i < 4; ++i)
        reactor.lane->submit(make_job(
            [&](m0::completion_port&) {
                met += all_running.arrive_and_wait(10s);
                live_while_running = ex.live_threads();
                counted.arrive_and_wait(10s);
            },
            [&](bool) { ++completed; }));
    BOOST_REQUIRE(reactor.run_until([&] { return completed == 4; }, 20s));
    BOOST_TEST(met.load() == 4u, "grew to run 4 blocking jobs at once");
    BOOST_TEST(live_while_running.load() == 4u);

    BOOST_REQUIRE(eventually([&] { return ex.live_threads() == 1; }, 10s));
    // Several idle timeouts later it is still at `threads`.
    const auto until = clock_type::now() + 3 * o.idle_timeout;
    while (clock_type::now() < until) {
        BOOST_REQUIRE_EQUAL(ex.live_threads(), 1u);
        std::this_thread::sleep_for(10ms);
    }
    // And it still serves.
    bool done = false;
    reactor.lane->submit(make_job([](m0::completion_port&) {}, [&](bool) { done = true; }));
    BOOST_REQUIRE(reactor.run_until([&] { return done; }, 2s));
    ex.stop();
}

// The adaptive reactor-side spin gives up on slow jobs: a reactor waiting
// for 20 ms views one after another must not burn its core spinning for
// each (at most the first wait, measured before any was, spins in vain).
BOOST_AUTO_TEST_CASE(reactor_spin_stops_for_slow_jobs) {
    auto o = options_for(ring_kind::vyukov, 1);
    o.reactor_spin = 50us;
    pool_executor ex(o);
    test_reactor reactor(ex);
    ex.start();
    const auto& lane = dynamic_cast<const pool_lane&>(*reactor.lane).state();
    constexpr int jobs = 20;
    int completed = 0;
    for (int i = 0; i < jobs; ++i) {
        reactor.lane->submit(make_job([](m0::completion_port&) { std::this_thread::sleep_for(20ms); },
                                      [&](bool) { ++completed; }));
        BOOST_REQUIRE(reactor.drain(10s));
    }
    BOOST_TEST(completed == jobs);
    BOOST_TEST(lane.spin.missed <= 2u, "spins that waited for a slow job: " << lane.spin.missed);
}

