#pragma once
// The LISTEN_FDS protocol (sd_listen_fds(3)): listening sockets a process
// receives from its parent as fds 3, 4, ... with LISTEN_FDS (their number),
// LISTEN_PID (the pid they are meant for) and LISTEN_FDNAMES (names split by
// ':'). systemd's socket activation passes them this way, and so does m0's
// supervisor to the m0 it re-executes on SIGHUP (names "m0-...").
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>

namespace m0 {

struct inherited_socket {
    int fd = -1;
    std::string name;                         // from LISTEN_FDNAMES; "" if none
    boost::asio::ip::tcp::endpoint address;   // what it is bound to (TCP)
    std::string path;                         // a Unix socket's path; empty for TCP
};

// The sockets passed to this process, made close-on-exec; empty when
// LISTEN_PID is not this process. Unsets the variables so that no child
// takes them for its own. Throws std::runtime_error for an fd that is not a
// listening TCP or Unix stream socket.
M0_INTERNAL_API std::vector<inherited_socket> take_inherited_sockets();

// Makes `sockets` fds 3, 4, ... (not close-on-exec) and sets LISTEN_FDS,
// LISTEN_PID (this process: exec keeps the pid) and LISTEN_FDNAMES, right
// before an exec. Other fds at those numbers must be close-on-exec.
M0_INTERNAL_API void pass_sockets_to_exec(const std::vector<inherited_socket>& sockets);

}  // namespace m0
