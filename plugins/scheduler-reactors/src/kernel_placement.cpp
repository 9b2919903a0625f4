#include "kernel_placement.hpp"

#include <unistd.h>

#include <stdexcept>
#include <utility>

#include <m0/listen_socket.hpp>
#include <m0/log.hpp>

#include "reactor_listeners.hpp"

namespace m0::scheduler_reactors {

using boost::asio::ip::tcp;

std::vector<tcp::endpoint> kernel_placement::open(scheduler_options& options) {
    const bool given = !options.shared_fds.empty() || !options.reactor_fds.empty();
    if (!options.shared_fds.empty()) strategy_ = listener_strategy::shared;
    if (!options.reactor_fds.empty()) strategy_ = listener_strategy::reuseport;
    exclusive_ = strategy_ == listener_strategy::shared && epoll_exclusive_supported();
    if (strategy_ == listener_strategy::shared && !exclusive_)
        log::warning("EPOLLEXCLUSIVE is not supported by this kernel: a shared listener wakes every reactor");

    // The processes of a prefork deployment share the socket: a burst is
    // shared out over all of their reactors.
    if (strategy_ == listener_strategy::shared) peers_->deployment = reactors::deployment_share(options.load);

    std::vector<tcp::endpoint> bound;
    if (given) {
        shared_fds_ = std::exchange(options.shared_fds, {});
        reactor_fds_ = std::exchange(options.reactor_fds, {});
        if (strategy_ == listener_strategy::reuseport && reactor_fds_.size() != options.reactors)
            throw std::invalid_argument("given " + std::to_string(reactor_fds_.size()) +
                                        " sets of reuseport sockets for " + std::to_string(options.reactors) +
                                        " reactors");
        for (int fd : strategy_ == listener_strategy::shared ? shared_fds_ : reactor_fds_.front())
            bound.push_back(bound_endpoint(fd));
        return bound;
    }
    auto addresses = options.addresses;
    if (strategy_ == listener_strategy::shared) {
        // Bound without SO_REUSEPORT: the bind is the check for another listener.
        for (auto& a : addresses) shared_fds_.push_back(open_listen_socket(a, false, options.backlog));
        return addresses;
    }
    if (options.check_addresses)
        for (const auto& a : addresses) check_no_other_listener(a);
    // Bound in order; a port 0 is resolved by the first reactor's socket and
    // reused by the others so that they share one address.
    reactor_fds_.assign(options.reactors, std::vector<int>(addresses.size(), -1));
    for (auto& fds : reactor_fds_)
        for (std::size_t a = 0; a < addresses.size(); ++a) fds[a] = open_listen_socket(addresses[a], true, options.backlog);
    return addresses;
}

std::vector<std::unique_ptr<reactors::reactor_listener>> kernel_placement::listeners_for(unsigned reactor,
                                                                                         boost::asio::io_context& io,
                                                                                         reactor_stats& stats) {
    std::vector<std::unique_ptr<reactors::reactor_listener>> out;
    if (strategy_ == listener_strategy::shared) {
        // Reactors are set up in order, before any runs: the peers list is
        // complete before a listener reads it.
        peers_->stats.push_back(&stats);
        peers_->closed_before.push_back(stats.closed.load());
        for (int fd : shared_fds_) out.push_back(make_shared_listener(io, fd, exclusive_, peers_, reactor));
    } else {
        for (int& fd : reactor_fds_.at(reactor)) out.push_back(make_reuseport_listener(io, std::exchange(fd, -1)));
    }
    return out;
}

void kernel_placement::close() noexcept {
    // The shared sockets are ours; each reuseport one belongs to its
    // listener once taken, and is ours only if no reactor took it.
    for (int fd : shared_fds_) ::close(fd);
    shared_fds_.clear();
    for (auto& fds : reactor_fds_)
        for (int& fd : fds)
            if (fd >= 0) ::close(std::exchange(fd, -1));
}

}  // namespace m0::scheduler_reactors
