// The eventfd wake channel: a signal is never lost, a semaphore channel
// hands out one wake per signal, and a timed wait gives up.
#define BOOST_TEST_MODULE wake_channel
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include <m0/rings/wake_channel.hpp>

using m0::rings::wake_channel;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(a_signal_before_the_wait_is_kept) {
    wake_channel w;
    BOOST_TEST(!w.wait(0ns));
    w.signal();
    w.signal();
    BOOST_TEST(w.wait(0ns));
    BOOST_TEST(!w.wait(0ns));  // one wait consumes every signal so far
}

BOOST_AUTO_TEST_CASE(a_semaphore_gives_one_wake_per_signal) {
    wake_channel w(true);
    for (int i = 0; i < 3; ++i) w.signal();
    for (int i = 0; i < 3; ++i) BOOST_TEST(w.wait(0ns));
    BOOST_TEST(!w.wait(0ns));
}

BOOST_AUTO_TEST_CASE(a_wait_without_timeout_returns_on_a_signal_from_another_thread) {
    wake_channel w;
    std::thread signaller([&] { w.signal(); });
    BOOST_TEST(w.wait(-1ns));
    signaller.join();
}

BOOST_AUTO_TEST_CASE(a_timed_wait_gives_up) {
    wake_channel w;
    BOOST_TEST(!w.wait(1ms));
}
