#pragma once
// Opening listening sockets for the scheduler's listener strategies.
#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>

namespace m0 {

// A bound (not listening) non-blocking, close-on-exec TCP socket with the
// options m0's listeners use. A port 0 in `address` is replaced by the port
// the kernel chose. Throws std::system_error naming the address on failure.
int open_bound_socket(boost::asio::ip::tcp::endpoint& address, bool reuseport);

// Throws std::system_error (EADDRINUSE, naming the address) when some
// socket already listens on `address` or on an address overlapping it:
// SO_REUSEPORT would let m0 bind next to it and silently take part of its
// traffic. So the check comes before a deployment's first bind, never once
// its own listeners exist (they would fail it). Nothing to check for port 0.
void check_no_other_listener(const boost::asio::ip::tcp::endpoint& address);

// A bound, listening, non-blocking, close-on-exec TCP socket. With
// `reuseport` several such sockets may share the address (one per worker).
// A port 0 in `address` is replaced by the port the kernel chose.
// Throws std::system_error naming the address on failure.
M0_INTERNAL_API int open_listen_socket(boost::asio::ip::tcp::endpoint& address, bool reuseport, int backlog);

// The address a socket is bound to (an inherited one's, say).
boost::asio::ip::tcp::endpoint bound_endpoint(int fd);

// Makes a listening socket refuse new connections without closing its fd:
// the fd may still be registered in a worker's epoll, and closing it early
// would let that worker accept on a reused fd number (docs/architecture.md).
void stop_listening(int fd) noexcept;

}  // namespace m0
