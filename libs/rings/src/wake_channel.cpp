#include <m0/rings/wake_channel.hpp>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace m0::rings {

wake_channel::wake_channel(bool semaphore)
    : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | (semaphore ? EFD_SEMAPHORE : 0))) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

wake_channel::~wake_channel() { ::close(fd_); }

void wake_channel::signal() noexcept {
    const std::uint64_t one = 1;
    while (::write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

bool wake_channel::wait(std::chrono::nanoseconds timeout) noexcept {
    using namespace std::chrono;
    const bool forever = timeout.count() < 0;
    const auto deadline = steady_clock::now() + (forever ? nanoseconds(0) : timeout);
    for (;;) {
        std::uint64_t value = 0;
        if (::read(fd_, &value, sizeof value) == static_cast<ssize_t>(sizeof value)) return true;
        int wait_ms = -1;
        if (!forever) {
            const auto left = deadline - steady_clock::now();
            if (left <= nanoseconds(0)) return false;
            wait_ms = static_cast<int>(ceil<milliseconds>(left).count());
        }
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, wait_ms);
    }
}

}  // namespace m0::rings
