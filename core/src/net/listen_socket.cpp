#include <m0/listen_socket.hpp>

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
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
    if (::getsockname(fd, ep.data(), &len) == 0 && !is_unix_endpoint(ep)) ep.resize(len);
    else ep = {};
    return ep;
}

boost::asio::ip::tcp socket_protocol(int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return addr.ss_family == AF_INET6 ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4();
}

namespace {

[[noreturn]] void unix_fail(const std::string& what, const std::string& path, int err) {
    throw std::system_error(err, std::generic_category(), what + " unix:" + path);
}

sockaddr_un unix_address(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof a.sun_path)
        unix_fail("cannot listen on (a Unix socket path is 1 to " + std::to_string(sizeof a.sun_path - 1) +
                      " bytes long)",
                  path, ENAMETOOLONG);
    std::memcpy(a.sun_path, path.data(), path.size());
    return a;
}

// What is at the path already: nothing, a stale socket file (removed), or
// something m0 must not take over (throws).
void clear_stale(const std::string& path, const sockaddr_un& a) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    if (!S_ISSOCK(st.st_mode))
        unix_fail("cannot listen on (the path exists and is not a socket; remove it or choose another)", path,
                  EEXIST);
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) unix_fail("cannot create a socket for", path, errno);
    const int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    const int err = errno;
    ::close(probe);
    if (rc == 0)
        unix_fail("cannot listen on (a running process listens there: a second m0, or another server)", path,
                  EADDRINUSE);
    // ECONNREFUSED: nothing listens (left by a process that crashed).
    if (err != ECONNREFUSED) unix_fail("cannot check the socket already at", path, err);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) unix_fail("cannot remove the stale socket at", path, errno);
}

// "www-data" or "33" → its id; throws when unknown.
uid_t user_id(const std::string& name, const std::string& path, gid_t* primary) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(name.c_str(), &end, 10);
    const passwd* pw = (*end == '\0' && !name.empty()) ? ::getpwuid(static_cast<uid_t>(n)) : ::getpwnam(name.c_str());
    if (!pw && *end == '\0' && !name.empty()) return static_cast<uid_t>(n);
    if (!pw) unix_fail("cannot give to user '" + name + "' (no such user)", path, EINVAL);
    if (primary) *primary = pw->pw_gid;
    return pw->pw_uid;
}

gid_t group_id(const std::string& name, const std::string& path) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(name.c_str(), &end, 10);
    if (*end == '\0' && !name.empty()) return static_cast<gid_t>(n);
    const group* gr = ::getgrnam(name.c_str());
    if (!gr) unix_fail("cannot give to group '" + name + "' (no such group)", path, EINVAL);
    return gr->gr_gid;
}

}  // namespace

int open_unix_listen_socket(const unix_socket_spec& spec, int backlog) {
    const sockaddr_un a = unix_address(spec.path);
    // Names resolved first: an unknown one leaves nothing behind.
    gid_t primary = static_cast<gid_t>(-1);
    const uid_t uid = spec.owner.empty() ? static_cast<uid_t>(-1) : user_id(spec.owner, spec.path, &primary);
    const gid_t gid = spec.group.empty() ? primary : group_id(spec.group, spec.path);
    clear_stale(spec.path, a);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) unix_fail("cannot create a socket for", spec.path, errno);
    auto fail_closed = [&](const std::string& what, int err, bool created) {
        ::close(fd);
        if (created) ::unlink(spec.path.c_str());
        unix_fail(what, spec.path, err);
    };
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) fail_closed("cannot bind", errno, false);
    // Before listen(): no client connects through permissions not yet set.
    if (spec.mode >= 0 && ::chmod(spec.path.c_str(), static_cast<mode_t>(spec.mode)) != 0)
        fail_closed("cannot set the mode of", errno, true);
    if ((uid != static_cast<uid_t>(-1) || gid != static_cast<gid_t>(-1)) && ::lchown(spec.path.c_str(), uid, gid) != 0)
        fail_closed("cannot change the owner of", errno, true);
    if (::listen(fd, backlog) != 0) fail_closed("cannot listen on", errno, true);
    return fd;
}

}  // namespace m0
