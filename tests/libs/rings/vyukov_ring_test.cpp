// The Vyukov MPMC ring on its own: order, bounds, and no loss or duplicate
// under concurrent producers and consumers.
#define BOOST_TEST_MODULE vyukov_ring
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <m0/rings/vyukov_ring.hpp>

using m0::rings::vyukov_ring;

BOOST_AUTO_TEST_CASE(fifo_until_full_then_refuses) {
    vyukov_ring<int> ring(8);
    int v = 0;
    BOOST_TEST(!ring.try_pop(v));
    for (int i = 0; i < 8; ++i) BOOST_TEST(ring.try_push(i));
    BOOST_TEST(!ring.try_push(99));  // full: refused, not overwritten
    for (int i = 0; i < 8; ++i) {
        BOOST_REQUIRE(ring.try_pop(v));
        BOOST_TEST(v == i);
    }
    BOOST_TEST(!ring.try_pop(v));
}

BOOST_AUTO_TEST_CASE(wraps_around_many_times) {
    vyukov_ring<std::uint64_t> ring(4);
    std::uint64_t next_out = 0;
    for (std::uint64_t i = 0; i < 1000; ++i) {
        BOOST_REQUIRE(ring.try_push(i));
        if (i % 3 == 2) {
            std::uint64_t v = 0;
            while (ring.try_pop(v)) BOOST_REQUIRE_EQUAL(v, next_out++);
        }
    }
    std::uint64_t v = 0;
    while (ring.try_pop(v)) BOOST_REQUIRE_EQUAL(v, next_out++);
    BOOST_TEST(next_out == 1000u);
}

BOOST_AUTO_TEST_CASE(rejects_capacity_not_power_of_two) {
    BOOST_CHECK_THROW(vyukov_ring<int>(6), std::invalid_argument);
    BOOST_CHECK_THROW(vyukov_ring<int>(1), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(mpmc_no_loss_no_duplicate_per_producer_order) {
    constexpr unsigned producers = 3, consumers = 3;
    constexpr std::uint64_t per_producer = 200000;
    vyukov_ring<std::uint64_t> ring(64);
    std::vector<std::atomic<std::uint8_t>> seen(producers * per_producer);
    std::atomic<std::uint64_t> popped{0};
    std::atomic<bool> order_ok{true};

    std::vector<std::thread> threads;
    for (unsigned p = 0; p < producers; ++p)
        threads.emplace_back([&, p] {
            for (std::uint64_t i = 0; i < per_producer; ++i)
                while (!ring.try_push(p * per_producer + i)) std::this_thread::yield();
        });
    for (unsigned c = 0; c < consumers; ++c)
        threads.emplace_back([&] {
            // Each consumer sees one producer's values in increasing order.
            std::vector<std::int64_t> last(producers, -1);
            std::uint64_t v = 0;
            while (popped.load() < producers * per_producer) {
                if (!ring.try_pop(v)) {
                    std::this_thread::yield();
                    continue;
                }
                seen[v].fetch_add(1);
                const auto p = v / per_producer;
                const auto i = static_cast<std::int64_t>(v % per_producer);
                if (i <= last[p]) order_ok = false;
                last[p] = i;
                popped.fetch_add(1);
            }
        });
    for (auto& t : threads) t.join();

    std::uint64_t once = 0;
    for (auto& s : seen) once += s.load() == 1;
    BOOST_TEST(once == producers * per_producer);
    BOOST_TEST(order_ok.load());
}
