#include "server/port_reservation.hpp"

#include <unistd.h>

#include "scheduler/listen_socket.hpp"

namespace m0 {

port_reservation::port_reservation(std::vector<boost::asio::ip::tcp::endpoint>& addresses) {
    // Before anything of this deployment binds: the serving processes skip
    // the check, since their siblings listen on the same addresses.
    for (const auto& a : addresses) check_no_other_listener(a);
    try {
        // Same options as the serving processes' listeners, so the kernel
        // lets them bind next to these never-listening sockets.
        for (auto& a : addresses) fds_.push_back(open_bound_socket(a, true));
    } catch (...) {
        release();
        throw;
    }
}

port_reservation::~port_reservation() { release(); }

void port_reservation::release() noexcept {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
}

}  // namespace m0
