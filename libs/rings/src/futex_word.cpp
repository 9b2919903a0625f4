#include <m0/rings/futex_word.hpp>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace m0::rings {

namespace {

// The kernel reads the int the atomic holds: same size and representation,
// and lock-free, so no hidden lock sits beside the value.
static_assert(sizeof(std::atomic<int>) == sizeof(int));
static_assert(std::atomic<int>::is_always_lock_free);

long futex(const std::atomic<int>& word, int op, int value, const timespec* timeout) noexcept {
    return ::syscall(SYS_futex, reinterpret_cast<const int*>(&word), op, value, timeout, nullptr, 0);
}

}  // namespace

bool futex_word::wait_while(int expected, std::chrono::nanoseconds timeout) const noexcept {
    using namespace std::chrono;
    const bool forever = timeout.count() < 0;
    const auto deadline = steady_clock::now() + (forever ? nanoseconds(0) : timeout);
    while (value_.load() == expected) {
        timespec left_ts{};
        if (!forever) {
            const auto left = deadline - steady_clock::now();
            if (left <= nanoseconds(0)) return false;
            const auto secs = duration_cast<seconds>(left);
            left_ts.tv_sec = static_cast<time_t>(secs.count());
            left_ts.tv_nsec = static_cast<long>((left - secs).count());
        }
        // EAGAIN: the word changed before the kernel looked; EINTR, a late
        // wake, ETIMEDOUT: the loop re-reads the word (and the clock).
        futex(value_, FUTEX_WAIT_PRIVATE, expected, forever ? nullptr : &left_ts);
    }
    return true;
}

void futex_word::wake_one() const noexcept { futex(value_, FUTEX_WAKE_PRIVATE, 1, nullptr); }

}  // namespace m0::rings
