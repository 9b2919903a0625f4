#include "server/listen_sockets.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

#include <m0/log.hpp>

#include <m0/listen_socket.hpp>

namespace m0 {
namespace {

using boost::asio::ip::tcp;

const std::string shared_prefix = "m0-shared";
const std::string slot_prefix = "m0-slot-";

// A configured address takes a socket bound to it; a port 0 takes any port.
bool matches(const tcp::endpoint& configured, const tcp::endpoint& bound) {
    return configured == bound || (configured.port() == 0 && configured.address() == bound.address());
}

// "m0-slot-<slot>-<reactor>" → {slot, reactor}.
bool parse_slot_name(const std::string& name, unsigned& slot, unsigned& reactor) {
    if (name.rfind(slot_prefix, 0) != 0) return false;
    return std::sscanf(name.c_str() + slot_prefix.size(), "%u-%u", &slot, &reactor) == 2;
}

void close_all(std::vector<int>& fds) noexcept {
    for (int& fd : fds)
        if (fd >= 0) ::close(std::exchange(fd, -1));
}

}  // namespace

listen_sockets::listen_sockets(std::vector<tcp::endpoint>& addresses, const socket_layout& layout, unsigned slots,
                               int backlog, std::vector<inherited_socket> inherited,
                               std::vector<std::optional<unix_socket_spec>> unix)
    : addresses_(addresses), strategy_(layout.strategy), reactors_(layout.reuseport_sockets), backlog_(backlog),
      shared_(addresses.size(), -1), unix_(std::move(unix)), owner_(::getpid()) {
    unix_.resize(addresses_.size());
    if (std::any_of(unix_.begin(), unix_.end(), [](const auto& u) { return u.has_value(); }))
        strategy_ = listener_strategy::shared;
    const bool activated = std::any_of(inherited.begin(), inherited.end(), [](const inherited_socket& s) {
        return s.name.rfind("m0-", 0) != 0;
    });
    if (activated) {
        log::info("listening on sockets passed by the parent process (LISTEN_FDS): one shared listener per address");
        strategy_ = listener_strategy::shared;
    }
    // A reload keeps shared sockets shared: they own the address without
    // SO_REUSEPORT, so reuseport ones could not be bound beside them.
    const bool shared = std::any_of(inherited.begin(), inherited.end(), [](const inherited_socket& s) {
        return s.name == shared_prefix;
    });
    if (shared && strategy_ != listener_strategy::shared) {
        log::warning("scheduler.listener: reuseport takes a restart, not a reload: serving on the shared listeners");
        strategy_ = listener_strategy::shared;
    }
    try {
        for (auto& s : inherited) {
            unsigned slot = 0, reactor = 0;
            const bool slot_socket = parse_slot_name(s.name, slot, reactor);
            // A Unix socket by its path, a TCP one by its address.
            std::size_t a = 0;
            while (a < addresses_.size() && (s.path.empty() ? unix_[a] || !matches(addresses_[a], s.address)
                                                            : !unix_[a] || unix_[a]->path != s.path))
                ++a;
            const bool wanted = a < addresses_.size() &&
                                (slot_socket ? strategy_ == listener_strategy::reuseport && slot < slots &&
                                                   reactor < reactors_
                                             : shared_[a] < 0);
            if (!wanted) {
                // m0's own, from before a reload: an address no longer listed.
                if (s.name.rfind("m0-", 0) != 0) {
                    std::ostringstream why;
                    why << "LISTEN_FDS: the socket on ";
                    if (s.path.empty()) why << s.address;
                    else why << "unix:" << s.path;
                    why << " (fd " << s.fd
                        << ") matches no address of server.listen (or a second one for it); list it there";
                    throw std::runtime_error(why.str());
                }
                ::close(std::exchange(s.fd, -1));
                // A socket file of the m0 replaced, no longer listed: gone with it.
                if (!s.path.empty()) ::unlink(s.path.c_str());
                continue;
            }
            // Taken over from the m0 replaced: removed at exit; systemd's are systemd's.
            if (!s.path.empty() && s.name.rfind("m0-", 0) == 0) owned_paths_.push_back(s.path);
            if (s.path.empty()) addresses_[a] = s.address;
            if (slot_socket) {
                auto& fds = slots_[slot];
                fds.resize(reactors_, std::vector<int>(addresses_.size(), -1));
                fds[reactor][a] = std::exchange(s.fd, -1);
            } else {
                shared_[a] = std::exchange(s.fd, -1);
            }
        }
        if (strategy_ == listener_strategy::shared) {
            // Without SO_REUSEPORT the bind is the check for another listener.
            for (std::size_t a = 0; a < addresses_.size(); ++a) {
                if (shared_[a] >= 0) continue;
                if (unix_[a]) {
                    shared_[a] = open_unix_listen_socket(*unix_[a], backlog_);
                    owned_paths_.push_back(unix_[a]->path);
                } else {
                    shared_[a] = open_listen_socket(addresses_[a], false, backlog_);
                }
            }
        } else {
            for (std::size_t a = 0; a < addresses_.size(); ++a)
                if (!slots_.count(0)) check_no_other_listener(addresses_[a]);
            // Resolves a port 0 once, for every slot.
            open_slot(0);
        }
    } catch (...) {
        for (auto& s : inherited)
            if (s.fd >= 0) ::close(s.fd);
        close_all(shared_);
        for (auto& [slot, fds] : slots_)
            for (auto& r : fds) close_all(r);
        for (const auto& p : owned_paths_) ::unlink(p.c_str());
        throw;
    }
}

listen_sockets::~listen_sockets() {
    close_all(shared_);
    for (auto& [slot, fds] : slots_)
        for (auto& r : fds) close_all(r);
    // A serving process forked with this object leaves the files alone.
    if (::getpid() == owner_)
        for (const auto& p : owned_paths_) ::unlink(p.c_str());
}

void listen_sockets::open_slot(unsigned slot) {
    if (strategy_ != listener_strategy::reuseport) return;
    auto& fds = slots_[slot];
    fds.resize(reactors_, std::vector<int>(addresses_.size(), -1));
    for (auto& r : fds)
        for (std::size_t a = 0; a < addresses_.size(); ++a)
            if (r[a] < 0) r[a] = open_listen_socket(addresses_[a], true, backlog_);
}

void listen_sockets::close_slot(unsigned slot) noexcept {
    auto it = slots_.find(slot);
    if (it == slots_.end()) return;
    for (auto& r : it->second) close_all(r);
    slots_.erase(it);
}

void listen_sockets::hand_to_scheduler(unsigned slot, scheduler_options& options) {
    if (strategy_ == listener_strategy::shared) {
        options.shared_fds = std::exchange(shared_, {});
    } else {
        open_slot(slot);
        options.reactor_fds = std::exchange(slots_[slot], {});
    }
    options.check_addresses = false;
    for (auto& [s, fds] : slots_)
        for (auto& r : fds) close_all(r);
    slots_.clear();
}

std::vector<inherited_socket> listen_sockets::for_exec() const {
    std::vector<inherited_socket> out;
    for (std::size_t a = 0; a < shared_.size(); ++a)
        if (shared_[a] >= 0)
            out.push_back({shared_[a], shared_prefix, addresses_[a], unix_[a] ? unix_[a]->path : std::string()});
    for (const auto& [slot, fds] : slots_)
        for (std::size_t r = 0; r < fds.size(); ++r)
            for (std::size_t a = 0; a < fds[r].size(); ++a)
                if (fds[r][a] >= 0)
                    out.push_back({fds[r][a], slot_prefix + std::to_string(slot) + "-" + std::to_string(r),
                                   addresses_[a], {}});
    return out;
}

}  // namespace m0
