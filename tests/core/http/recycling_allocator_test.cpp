// The per-thread free list behind each request's exchange: a block freed on
// a reactor is the next one that reactor allocates, the list is bounded,
// and a block freed on another thread stays usable there.
#define BOOST_TEST_MODULE recycling_allocator
#include <boost/test/unit_test.hpp>

#include <memory>
#include <thread>
#include <vector>

#include <m0/recycling_allocator.hpp>

using m0::recycling_allocator;

namespace {
struct exchange_like {
    explicit exchange_like(int v) : value(v) {}
    int value;
    char payload[200] = {};
};

std::shared_ptr<exchange_like> make(int v) {
    return std::allocate_shared<exchange_like>(recycling_allocator<exchange_like>(), v);
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_freed_block_is_reused_by_the_next_request) {
    const void* first = nullptr;
    {
        auto a = make(1);
        first = a.get();
    }
    auto b = make(2);
    BOOST_TEST(static_cast<const void*>(b.get()) == first);
    BOOST_TEST(b->value == 2);
}

BOOST_AUTO_TEST_CASE(many_live_blocks_are_distinct_and_the_list_stays_bounded) {
    constexpr std::size_t n = recycling_allocator<exchange_like>::max_cached * 3;
    std::vector<std::shared_ptr<exchange_like>> live;
    for (std::size_t i = 0; i < n; ++i) live.push_back(make(static_cast<int>(i)));
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(live[i]->value == static_cast<int>(i));
    live.clear();  // max_cached kept, the rest returned to the heap (ASan checks both)
    for (std::size_t i = 0; i < n; ++i) live.push_back(make(static_cast<int>(i)));
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(live[i]->value == static_cast<int>(i));
}

BOOST_AUTO_TEST_CASE(a_block_freed_on_another_thread_is_reused_there) {
    auto a = make(7);
    // Asserted on the main thread (Boost.Test is not thread-safe).
    bool reused = false;
    int value = 0;
    std::thread other([&, p = std::move(a)]() mutable {
        const void* freed = p.get();
        p.reset();  // onto this thread's list
        auto b = make(8);
        reused = b.get() == freed;
        value = b->value;
    });  // its list is emptied when it exits
    other.join();
    BOOST_TEST(reused);
    BOOST_TEST(value == 8);
}

namespace {
struct job_like {
    virtual ~job_like() = default;
};
// A per-request job, deleted through its base as an executor deletes it.
struct call_like final : job_like, m0::recycled<call_like> {
    explicit call_like(int v) : value(v) {}
    int value;
    char payload[300] = {};
};
}  // namespace

BOOST_AUTO_TEST_CASE(a_recycled_class_takes_the_block_of_the_one_deleted_before) {
    std::unique_ptr<job_like> a = std::make_unique<call_like>(1);
    const void* first = a.get();
    a.reset();
    // Another allocation of that size in between would take malloc's most
    // recently freed block, not the thread's free list.
    void* unrelated = ::operator new(sizeof(call_like));
    auto b = std::make_unique<call_like>(2);
    BOOST_TEST(static_cast<const void*>(b.get()) == first);
    BOOST_TEST(b->value == 2);
    ::operator delete(unrelated);
}
