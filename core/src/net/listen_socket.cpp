#include <m0/listen_socket.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <system_error>

namespace m0 {
namespace {

[[noreturn]] void fail(const char* what, const boost::asio::ip::tcp::endpoint& address, int err) {
    std::ostringstream out;
    out << "cannot " << what << " " << address;
    throw std::system_error(err, std::generic_category(), out.str());
}

// A non-blocking, close-on-exec TCP socket with m0's listener options.
int make_socket(const boost::asio::ip::tcp::endpoint& address, bool reuseport) {
    int fd = ::socket(address.protocol().family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("create a socket for", address, errno);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        int err = errno;
        ::close(fd);
        fail("set SO_REUSEPORT on", address, err);
    }
    if (address.address().is_v6()) {
        // "[::]:80" means IPv6 only; list "0.0.0.0:80" too for IPv4.
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    return fd;
}

[[noreturn]] void address_in_use(const boost::asio::ip::tcp::endpoint& address, int err) {
    std::ostringstream out;
    out << "cannot listen on " << address
        << ": another socket listens there (a second m0, or a server sharing the port with SO_REUSEPORT)";
    throw std::system_error(err, std::generic_category(), out.str());
}

}  // namespace

int open_bound_socket(boost::asio::ip::tcp::endpoint& address, bool reuseport) {
    int fd = make_socket(address, reuseport);
    if (::bind(fd, address.data(), static_cast<socklen_t>(address.size())) != 0) {
        int err = errno;
        ::close(fd);
        // Without SO_REUSEPORT the bind is the check for another listener
        // (check_no_other_listener): said the same way.
        if (err == EADDRINUSE && !reuseport) address_in_use(address, err);
        fail("bind", address, err);
    }
    if (address.port() == 0) {
        socklen_t len = static_cast<socklen_t>(address.capacity());
        ::getsockname(fd, address.data(), &len);
        address.resize(len);
    }
    return fd;
}

void check_no_other_listener(const boost::asio::ip::tcp::endpoint& address) {
    // The kernel gives a port 0 one that nothing is bound to.
    if (address.port() == 0) return;
    // With SO_REUSEADDR and without SO_REUSEPORT, the bind fails with
    // EADDRINUSE exactly when a socket listens on an address that overlaps
    // this one (the same, a wildcard, a dual-stack [::]), whatever options it
    // has; sockets in TIME_WAIT and a supervisor's bound-but-not-listening
    // reservation do not count. The probe is closed at once.
    int fd = make_socket(address, false);
    const int rc = ::bind(fd, address.data(), static_cast<socklen_t>(address.size()));
    const int err = errno;
    ::close(fd);
    if (rc == 0) return;
    if (err != EADDRINUSE) fail("bind", address, err);
    address_in_use(address, err);
}

int open_listen_socket(boost::asio::ip::tcp::endpoint& address, bool reuseport, int backlog) {
    int fd = open_bound_socket(address, reuseport);
    if (::listen(fd, backlog) != 0) {
        int err = errno;
        ::close(fd);
        fail("listen on", address, err);
    }
    return fd;
}

boost::asio::ip::tcp::endpoint bound_endpoint(int fd) {
    boost::asio::ip::tcp::endpoint ep;
    socklen_t len = static_cast<socklen_t>(ep.capacity());
    if (::getsockname(fd, ep.data(), &len) == 0) ep.resize(len);
    return ep;
}

boost::asio::ip::tcp socket_protocol(int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return addr.ss_family == AF_INET6 ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4();
}

}  // namespace m0
