#pragma once
// A word one thread parks on and another wakes it through: an atomic int
// with a Linux futex on its address.
//
// Why not the eventfd (wake_channel) for a thread that parks: the futex
// carries no token. An eventfd wake is state in the kernel that the parker
// must consume (a read that fails with EAGAIN, a poll, the read) and that a
// parker who found its work without sleeping must still take, or the next
// park returns at once. Here the word itself is the state: the waker changes
// it and makes one FUTEX_WAKE, the parker makes one FUTEX_WAIT that the
// kernel refuses if the word has already changed, so a wake can never be
// lost, and a late one only ends a later wait early, which re-reads the word
// and waits again. Keep wake_channel where an fd is needed (an event loop
// that watches it, a counting semaphore).
#include <atomic>
#include <chrono>

namespace m0::rings {

class futex_word {
public:
    explicit futex_word(int value = 0) noexcept : value_(value) {}
    futex_word(const futex_word&) = delete;
    futex_word& operator=(const futex_word&) = delete;

    // Sequentially consistent, like the std::atomic<int> they forward to.
    int load() const noexcept { return value_.load(); }
    void store(int value) noexcept { value_.store(value); }
    bool compare_exchange(int& expected, int desired) noexcept {
        return value_.compare_exchange_strong(expected, desired);
    }

    // Blocks while the word holds `expected`, for at most `timeout`
    // (negative: no limit). True when the word no longer holds it (checked
    // before any syscall); false when the timeout passed first. Wake-ups that
    // leave the word unchanged (a signal, a late wake) wait again.
    bool wait_while(int expected, std::chrono::nanoseconds timeout) const noexcept;
    // Wakes the thread blocked in wait_while, if any. Change the word first.
    void wake_one() const noexcept;

private:
    std::atomic<int> value_;
};

}  // namespace m0::rings
