#include "server/port_reservation.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <system_error>

namespace m0 {
namespace {

[[noreturn]] void fail(const char* what, const boost::asio::ip::tcp::endpoint& address, int err) {
    std::ostringstream out;
    out << "cannot " << what << " " << address;
    throw std::system_error(err, std::generic_category(), out.str());
}

// The options match the serving processes' listeners, so the kernel lets
// them bind next to this socket.
int bind_reserved(boost::asio::ip::tcp::endpoint& address) {
    int fd = ::socket(address.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("create a socket for", address, errno);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        int err = errno;
        ::close(fd);
        fail("set SO_REUSEPORT on", address, err);
    }
    if (address.address().is_v6()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(fd, address.data(), static_cast<socklen_t>(address.size())) != 0) {
        int err = errno;
        ::close(fd);
        fail("bind", address, err);
    }
    if (address.port() == 0) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
        std::memcpy(address.data(), &ss, len);
        address.resize(len);
    }
    return fd;
}

}  // namespace

port_reservation::port_reservation(std::vector<boost::asio::ip::tcp::endpoint>& addresses) {
    try {
        for (auto& a : addresses) fds_.push_back(bind_reserved(a));
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
