// The reactor thread's cache of response buffers: what comes back out is
// empty of any earlier body, and large buffers are not kept.
#define BOOST_TEST_MODULE wsgi_response_buffers
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>

#include "response_buffers.hpp"

using m0::wsgi::response_buffers;

BOOST_AUTO_TEST_CASE(a_buffer_given_back_is_taken_again_without_its_body) {
    response_buffers b = response_buffers::take();
    b.body.assign(1000, 'x');
    b.spare_headers = {{"X-Kept", "its strings keep their room"}};
    const char* body_storage = b.body.data();
    response_buffers::give_back(std::move(b));

    response_buffers again = response_buffers::take();
    BOOST_TEST(again.body.empty());
    BOOST_TEST(again.body.capacity() >= 1000u);
    BOOST_TEST(static_cast<const void*>(again.body.data()) == static_cast<const void*>(body_storage));
    BOOST_TEST(again.spare_headers.size() == 1u);
    BOOST_TEST(response_buffers::take().body.capacity() < 1000u);  // the cache had only that one
}

BOOST_AUTO_TEST_CASE(a_large_body_buffer_is_not_kept) {
    response_buffers b = response_buffers::take();
    b.body.assign(response_buffers::lent_body_max * 4, 'x');
    response_buffers::give_back(std::move(b));
    BOOST_TEST(response_buffers::take().body.capacity() < response_buffers::lent_body_max);
}

BOOST_AUTO_TEST_CASE(each_thread_has_its_own_cache) {
    response_buffers b = response_buffers::take();
    b.body.assign(1000, 'x');
    response_buffers::give_back(std::move(b));
    std::size_t other_capacity = 0;
    std::thread([&] { other_capacity = response_buffers::take().body.capacity(); }).join();
    BOOST_TEST(other_capacity < 1000u);
    BOOST_TEST(response_buffers::take().body.capacity() >= 1000u);
}
