#include <m0/reactors/deployment_share.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace m0::reactors {

deployment_share::deployment_share(deployment_load load)
    : load_(load), self_(static_cast<std::int32_t>(::getpid())) {}

bool deployment_share::owns(const reactor_load& e) const noexcept {
    return e.owner.load(std::memory_order_relaxed) == self_;
}

void deployment_share::publish(unsigned reactor, std::uint64_t open, bool waiting) const noexcept {
    if (!load_.table || reactor >= load_.reactors) return;
    reactor_load& e = *load_.entry(load_.row, reactor);
    if (!owns(e)) return;
    e.live.store(open, std::memory_order_relaxed);
    e.waiting.store(waiting, std::memory_order_relaxed);
}

void deployment_share::withdraw(unsigned reactor) const noexcept {
    if (!load_.table || reactor >= load_.reactors) return;
    reactor_load& e = *load_.entry(load_.row, reactor);
    if (!owns(e)) return;
    e.live.store(reactor_load::absent, std::memory_order_relaxed);
    e.waiting.store(false, std::memory_order_relaxed);
}

void deployment_share::consider_others(least_loaded& into) const noexcept {
    for (unsigned p = 0; load_.table && p < load_.processes; ++p) {
        if (p == load_.row) continue;
        for (unsigned r = 0; r < load_.reactors; ++r) {
            const reactor_load& e = *load_.entry(p, r);
            const auto open = e.live.load(std::memory_order_relaxed);
            if (open != reactor_load::absent) into.consider(open, e.waiting.load(std::memory_order_relaxed), e.wake_fd);
        }
    }
}

int deployment_share::wake_fd(unsigned reactor) const noexcept {
    if (!load_.table || reactor >= load_.reactors) return -1;
    return load_.entry(load_.row, reactor)->wake_fd;
}

void deployment_share::wake(int fd) noexcept {
    // Nonblocking: a counter already at its maximum has a wake pending.
    if (fd >= 0) (void)::eventfd_write(fd, 1);
}

void deployment_share::consume_wake(int fd) noexcept {
    eventfd_t ignored;
    if (fd >= 0) (void)::eventfd_read(fd, &ignored);
}

bool connections_queued(int listen_fd) noexcept {
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (::getsockopt(listen_fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return true;
    return info.tcpi_unacked > 0;
}

}  // namespace m0::reactors
