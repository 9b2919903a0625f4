#pragma once
// A kernel wake channel: one eventfd. Only wakes cross the kernel on the ring
// path; the `none` ring uses one as a counting semaphore for every job.
#include <chrono>

namespace m0::rings {

class wake_channel {
public:
    // semaphore: each wait() consumes one signal() (EFD_SEMAPHORE) instead of
    // all of them.
    explicit wake_channel(bool semaphore = false);
    ~wake_channel();
    wake_channel(const wake_channel&) = delete;
    wake_channel& operator=(const wake_channel&) = delete;

    void signal() noexcept;
    // Blocks until signalled or the timeout passes (negative: no timeout).
    // True when a signal was consumed.
    bool wait(std::chrono::nanoseconds timeout) noexcept;
    // The eventfd, for an event loop that watches it itself (asyncio's
    // add_reader); consume a signal then with wait(0ns).
    int native_handle() const noexcept { return fd_; }

private:
    int fd_ = -1;
};

}  // namespace m0::rings
