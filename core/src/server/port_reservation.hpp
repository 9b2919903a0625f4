#pragma once
// The supervisor's hold on the listen addresses of a prefork deployment:
// bound SO_REUSEPORT sockets that never listen (so they take no connection),
// opened before anything forks. A port 0 is resolved here once, so that every
// serving process binds the same port, and an address taken by another
// program is reported once, before any process starts.
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>

namespace m0 {

class M0_INTERNAL_API port_reservation {
public:
    // Replaces a port 0 in `addresses` by the port reserved for it. Throws
    // std::system_error ("cannot bind 127.0.0.1:80: ...") on failure.
    explicit port_reservation(std::vector<boost::asio::ip::tcp::endpoint>& addresses);
    ~port_reservation();
    port_reservation(const port_reservation&) = delete;
    port_reservation& operator=(const port_reservation&) = delete;

    // Closes the sockets (in a serving process, which binds its own).
    void release() noexcept;

private:
    std::vector<int> fds_;
};

}  // namespace m0
