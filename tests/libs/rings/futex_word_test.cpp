// The futex word a thread parks on: a wait ends when the word changes (also
// when it changed before the wait began), never on a wake that left the word
// as it was, and a timed wait gives up.
#define BOOST_TEST_MODULE futex_word
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include <m0/rings/futex_word.hpp>

using m0::rings::futex_word;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(a_change_before_the_wait_ends_it_at_once) {
    futex_word w(1);
    w.store(2);
    BOOST_TEST(w.wait_while(1, -1ns));
}

BOOST_AUTO_TEST_CASE(a_timed_wait_on_an_unchanged_word_gives_up) {
    futex_word w(1);
    BOOST_TEST(!w.wait_while(1, 1ms));
    BOOST_TEST(w.load() == 1);
}

// The parker/waker handshake of the pool, many times over with the change
// landing before, during and after the parker's syscall: no wait may hang.
BOOST_AUTO_TEST_CASE(no_change_is_lost_between_the_check_and_the_sleep) {
    constexpr int rounds = 5000;
    futex_word w(0);
    std::atomic<int> armed{-1};
    std::thread parker([&] {
        for (int i = 0; i < rounds; ++i) {
            w.store(1);
            armed.store(i);
            // Unbounded wait: a lost change hangs here and the test times out.
            w.wait_while(1, -1ns);
        }
    });
    for (int i = 0; i < rounds; ++i) {
        while (armed.load() != i) std::this_thread::yield();
        int expected = 1;
        BOOST_REQUIRE(w.compare_exchange(expected, 2));
        w.wake_one();
    }
    parker.join();
    BOOST_TEST(w.load() == 2);
}

// A wake that left the word as it was (a late one from an earlier round, in
// the pool) does not end the wait: the waiter re-reads the word and sleeps on
// until its timeout.
BOOST_AUTO_TEST_CASE(a_wake_without_a_change_does_not_end_the_wait) {
    futex_word w(1);
    std::atomic<bool> returned{false};
    bool changed = true;
    std::thread waiter([&] {
        changed = w.wait_while(1, 100ms);
        returned.store(true);
    });
    while (!returned.load()) w.wake_one();
    waiter.join();
    BOOST_TEST(!changed);
}
