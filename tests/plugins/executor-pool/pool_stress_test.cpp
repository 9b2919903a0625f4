// Several reactors (lanes) and several pool threads exchanging many jobs:
// every job runs once and completes once, on its own reactor, for each ring
// kind. Meant to run under ThreadSanitizer too (label `tsan`);
// M0_POOL_STRESS_JOBS sets the jobs per reactor.
#define BOOST_TEST_MODULE pool_stress
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "test_reactor.hpp"

using namespace m0::pool;
using namespace m0::pool::test;
namespace bdata = boost::unit_test::data;

namespace {

std::uint64_t jobs_per_reactor() {
    if (const char* env = std::getenv("M0_POOL_STRESS_JOBS")) return std::strtoull(env, nullptr, 10);
#if defined(__SANITIZE_THREAD__)
    return 350000;  // x3 reactors: over a million jobs per ring kind even under TSan (~20 s)
#else
    return 400000;  // x3 reactors: 1.2M jobs per ring kind
#endif
}

}  // namespace

// What one reactor saw (outside the anonymous namespace: test-case lambdas
// capture it).
struct stress_reactor_result {
    std::uint64_t completed = 0, sum = 0, parts = 0, wrong_thread = 0, cancelled = 0;
};

namespace {

pool_options stress_options(ring_kind ring) {
    pool_options o;
    o.threads = o.max_threads = 3;
    o.ring = ring;
    o.ring_capacity = 64;  // small: the overflow paths run too
    o.spin = std::chrono::microseconds(2);
    return o;
}

// 3 reactors x 3 pool threads, bursts beyond the rings: every job runs once
// and completes once on its own reactor, every partial result arrives.
void stress(const pool_options& o) {
    constexpr unsigned reactors = 3;
    const std::uint64_t per_reactor = jobs_per_reactor();
    pool_executor ex(o);

    // Lanes are made on this thread before the reactors run, as the core does.
    std::vector<std::unique_ptr<test_reactor>> rs;
    for (unsigned r = 0; r < reactors; ++r) rs.push_back(std::make_unique<test_reactor>(ex));
    ex.start();

    std::vector<std::atomic<std::uint8_t>> runs(reactors * per_reactor);
    std::vector<stress_reactor_result> results(reactors);
    std::vector<std::thread> threads;
    for (unsigned r = 0; r < reactors; ++r)
        threads.emplace_back([&, r] {
            test_reactor& reactor = *rs[r];
            stress_reactor_result& res = results[r];
            const auto me = std::this_thread::get_id();
            std::uint64_t next = 0;
            // Bursts of up to 300 jobs (beyond the ring) then drain a bit.
            while (next < per_reactor || reactor.lane->jobs_in_flight() != 0) {
                const std::uint64_t burst = 1 + (next * 7919) % 300;
                for (std::uint64_t k = 0; k < burst && next < per_reactor; ++k, ++next) {
                    const std::uint64_t id = r * per_reactor + next;
                    reactor.lane->submit(make_job(
                        [&, id](m0::completion_port& port) {
                            runs[id].fetch_add(1, std::memory_order_relaxed);
                            if (id % 5 == 0) port.post_fn([&, me] {
                                ++res.parts;
                                res.wrong_thread += std::this_thread::get_id() != me;
                            });
                        },
                        [&, id, me](bool cancelled) {
                            ++res.completed;
                            res.sum += id;
                            res.cancelled += cancelled;
                            res.wrong_thread += std::this_thread::get_id() != me;
                        }));
                }
                const std::size_t target = next < per_reactor ? 200 : 0;
                if (!reactor.run_until([&] { return reactor.lane->jobs_in_flight() <= target; }, 60s)) break;
            }
        });
    for (auto& t : threads) t.join();
    ex.stop();

    std::uint64_t once = 0;
    for (auto& v : runs) once += v.load() == 1;
    BOOST_TEST(once == reactors * per_reactor, "jobs run exactly once");
    for (unsigned r = 0; r < reactors; ++r) {
        const std::uint64_t first = r * per_reactor, last = first + per_reactor - 1;
        BOOST_TEST(results[r].completed == per_reactor);
        BOOST_TEST(results[r].sum == (first + last) * per_reactor / 2, "checksum of reactor " << r);
        std::uint64_t parts = 0;
        for (std::uint64_t id = first; id <= last; ++id) parts += id % 5 == 0;
        BOOST_TEST(results[r].parts == parts, "partial results of reactor " << r);
        BOOST_TEST(results[r].wrong_thread == 0u);
        BOOST_TEST(results[r].cancelled == 0u);
    }
}

}  // namespace

BOOST_DATA_TEST_CASE(many_reactors_many_threads_nothing_lost,
                     bdata::make({ring_kind::vyukov, ring_kind::lockfree, ring_kind::none}), ring) {
    stress(stress_options(ring));
}

// The adaptive reactor-side spin: reactors that poll their completion ring
// before announcing, and skip the announcement when a completion arrives,
// lose no completion and no wake either.
BOOST_AUTO_TEST_CASE(reactor_spin_nothing_lost) {
    auto o = stress_options(ring_kind::vyukov);
    o.reactor_spin = std::chrono::microseconds(50);
    stress(o);
}

// The default idle path (no spin: every idle thread parks at once, so every
// hand-off goes through the park protocol) with SCHED_BATCH threads, whose
// wakes may run late.
BOOST_AUTO_TEST_CASE(parking_at_once_batch_sched_nothing_lost) {
    auto o = stress_options(ring_kind::vyukov);
    o.spin = std::chrono::nanoseconds(0);
    o.batch_sched = true;
    stress(o);
}
