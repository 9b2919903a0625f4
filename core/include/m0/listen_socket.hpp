#pragma once
// Listening sockets as m0 opens them: for schedulers (which bind their own
// when no supervisor passed any) and for the supervisor.
#include <sys/socket.h>

#include <string>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>

namespace m0 {

// A Unix-domain listening socket: server.listen "unix:PATH mode=0660 owner=USER:GROUP".
struct unix_socket_spec {
    std::string path;
    int mode = -1;       // the socket file's permissions; -1: as the umask leaves them
    std::string owner;   // user name or uid; empty: m0's
    std::string group;   // group name or gid; empty: the owner's primary group, or m0's
};

// A bound, listening, non-blocking, close-on-exec Unix socket at spec.path,
// with its mode and owner. A socket file left there by a process that is
// gone (nothing answers a connect) is replaced; one that answers is not:
// throws std::system_error (EADDRINUSE) naming the path, as for anything
// else that is there or fails.
M0_API int open_unix_listen_socket(const unix_socket_spec& spec, int backlog);

// A Unix socket's addresses fill an Asio TCP endpoint's storage with an
// AF_UNIX address (the HTTP engine asks the socket for them as for TCP):
// true for such an endpoint (a client's or a listener's on a Unix socket).
inline bool is_unix_endpoint(const boost::asio::ip::tcp::endpoint& ep) noexcept {
    return ep.data()->sa_family == AF_UNIX;
}

// A bound (not listening) non-blocking, close-on-exec TCP socket with the
// options m0's listeners use. A port 0 in `address` is replaced by the port
// the kernel chose. Throws std::system_error naming the address on failure.
M0_API int open_bound_socket(boost::asio::ip::tcp::endpoint& address, bool reuseport);

// Throws std::system_error (EADDRINUSE, naming the address) when some
// socket already listens on `address` or on an address overlapping it:
// SO_REUSEPORT would let m0 bind next to it and silently take part of its
// traffic. So the check comes before a deployment's first bind, never once
// its own listeners exist (they would fail it). Nothing to check for port 0.
M0_API void check_no_other_listener(const boost::asio::ip::tcp::endpoint& address);

// A bound, listening, non-blocking, close-on-exec TCP socket. With
// `reuseport` several such sockets may share the address (one per reactor).
// A port 0 in `address` is replaced by the port the kernel chose.
// Throws std::system_error naming the address on failure.
M0_API int open_listen_socket(boost::asio::ip::tcp::endpoint& address, bool reuseport, int backlog);

// The address a socket is bound to (an inherited one's, say); a default
// (0.0.0.0:0) one for a Unix socket.
M0_API boost::asio::ip::tcp::endpoint bound_endpoint(int fd);

// The protocol (v4 or v6) of a socket's address family, to adopt it in Asio.
M0_API boost::asio::ip::tcp socket_protocol(int fd);

}  // namespace m0
