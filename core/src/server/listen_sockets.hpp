#pragma once
// The listening sockets of a deployment when its supervisor holds them
// (server.workers > 1) or when they were inherited (socket activation).
// Held by the supervisor, they never close while the deployment runs: a
// serving process that stops (a reload, a replacement) leaves the
// connections queued on them to the processes that still accept.
//  * shared: one socket per address, passed to every serving process.
//  * reuseport: per process slot, as many SO_REUSEPORT sockets per address
//    as the scheduler's socket_layout asks (one per reactor for `reactors`,
//    one for `balanced`), passed to whichever process serves that slot (its
//    replacement takes over the same sockets and their queues).
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/listen_socket.hpp>

#include <m0/scheduler.hpp>
#include "server/socket_activation.hpp"

namespace m0 {

class M0_INTERNAL_API listen_sockets {
public:
    // Takes the matching `inherited` sockets (closing the others, and the
    // reuseport ones of slots from `slots` on) and opens
    // what is missing: for `shared`, every address's socket; for
    // `reuseport`, nothing yet (open_slot). Sockets from systemd (any name
    // not made by m0) make the strategy `shared`. A port 0 in `addresses` is
    // replaced by the bound port. Throws std::system_error naming an address
    // that cannot be bound or that another program listens on.
    // `unix`: empty, or per address the Unix socket it is instead (server.listen
    // "unix:PATH"); any makes the strategy `shared` (a Unix socket has no
    // SO_REUSEPORT). The socket files this process made (or took over from the
    // m0 it replaced) are removed when it destroys this, not by its children.
    listen_sockets(std::vector<boost::asio::ip::tcp::endpoint>& addresses, const socket_layout& layout,
                   unsigned slots, int backlog, std::vector<inherited_socket> inherited,
                   std::vector<std::optional<unix_socket_spec>> unix = {});
    ~listen_sockets();
    listen_sockets(const listen_sockets&) = delete;
    listen_sockets& operator=(const listen_sockets&) = delete;

    listener_strategy strategy() const noexcept { return strategy_; }
    // Reuseport: opens the sockets of process slot `slot` unless open.
    void open_slot(unsigned slot);
    // Reuseport: closes them (a slot removed by SIGTTOU).
    void close_slot(unsigned slot) noexcept;
    // In the serving process of `slot`: hands its sockets to the scheduler
    // (which closes them when it is done) and closes every other.
    void hand_to_scheduler(unsigned slot, scheduler_options& options);
    // Every socket, named so that the m0 exec'd on SIGHUP finds each again.
    std::vector<inherited_socket> for_exec() const;

private:
    std::vector<boost::asio::ip::tcp::endpoint>& addresses_;
    listener_strategy strategy_;
    unsigned reactors_;  // reuseport sockets per slot and address
    int backlog_;
    std::vector<int> shared_;                                     // per address
    std::map<unsigned, std::vector<std::vector<int>>> slots_;     // slot → socket → address
    std::vector<std::optional<unix_socket_spec>> unix_;           // per address
    std::vector<std::string> owned_paths_;                        // removed by the destructor
    pid_t owner_ = 0;                                             // ... in this process only
};

}  // namespace m0
