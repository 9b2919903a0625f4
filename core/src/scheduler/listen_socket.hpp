#pragma once
// Opening listening sockets for the scheduler's listener strategies.
#include <boost/asio/ip/tcp.hpp>

namespace m0 {

// A bound, listening, non-blocking, close-on-exec TCP socket. With
// `reuseport` several such sockets may share the address (one per worker).
// Throws std::system_error naming the address on failure.
int open_listen_socket(const boost::asio::ip::tcp::endpoint& address, bool reuseport, int backlog);

// Makes a listening socket refuse new connections without closing its fd:
// the fd may still be registered in a worker's epoll, and closing it early
// would let that worker accept on a reused fd number (GUIDE section 3).
void stop_listening(int fd) noexcept;

}  // namespace m0
