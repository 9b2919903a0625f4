#include "demand_probe.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

namespace m0::pool {

void demand_probe::open_for_this_thread(source prefer) noexcept {
    close();
    stat_fd_ = ::open("/proc/thread-self/stat", O_RDONLY | O_CLOEXEC);
    if (prefer == source::schedstat) fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd_ >= 0 && demand_ns()) {
        kind_ = source::schedstat;
        return;
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (pthread_getcpuclockid(pthread_self(), &clock_) == 0) kind_ = source::cpu_clock;
}

void demand_probe::close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    if (stat_fd_ >= 0) ::close(stat_fd_);
    fd_ = stat_fd_ = -1;
    kind_ = source::none;
}

std::optional<std::uint64_t> demand_probe::parse_schedstat(const char* text, std::size_t size) noexcept {
    const char* end = text + size;
    std::uint64_t run = 0, wait = 0;
    auto [p, ec] = std::from_chars(text, end, run);
    if (ec != std::errc() || p == end || *p != ' ') return std::nullopt;
    auto [q, ec2] = std::from_chars(p + 1, end, wait);
    if (ec2 != std::errc()) return std::nullopt;
    return run + wait;
}

char demand_probe::parse_stat_state(const char* text, std::size_t size) noexcept {
    // The name may hold spaces and parentheses: the state follows the last ')'.
    const std::string_view s(text, size);
    const auto close = s.rfind(')');
    return close == std::string_view::npos || close + 2 >= s.size() ? 0 : s[close + 2];
}

bool demand_probe::runnable() const noexcept {
    if (stat_fd_ < 0) return false;
    char buf[512];
    const ssize_t n = ::pread(stat_fd_, buf, sizeof buf, 0);
    return n > 0 && parse_stat_state(buf, static_cast<std::size_t>(n)) == 'R';
}

std::optional<std::uint64_t> demand_probe::demand_ns() const noexcept {
    if (fd_ >= 0) {
        char buf[96];
        const ssize_t n = ::pread(fd_, buf, sizeof buf, 0);
        if (n <= 0) return std::nullopt;
        return parse_schedstat(buf, static_cast<std::size_t>(n));
    }
    if (kind_ == source::cpu_clock) {
        timespec ts{};
        if (clock_gettime(clock_, &ts) != 0) return std::nullopt;
        return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
    }
    return std::nullopt;
}

}  // namespace m0::pool
