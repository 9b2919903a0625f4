#include "server/port_reservation.hpp"

#include <unistd.h>

#include "scheduler/listen_socket.hpp"

namespace m0 {

port_reservation::port_reservation(std::vector<boost::asio::ip::tcp::endpoint>& addresses) {
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
