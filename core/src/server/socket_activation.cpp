#include "server/socket_activation.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include <m0/listen_socket.hpp>

namespace m0 {
namespace {

constexpr int first_fd = 3;  // SD_LISTEN_FDS_START

std::vector<std::string> split_names(const char* names) {
    std::vector<std::string> out;
    if (!names) return out;
    std::string_view rest(names);
    for (;;) {
        const auto colon = rest.find(':');
        out.emplace_back(rest.substr(0, colon));
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return out;
}

// A listening TCP or Unix stream socket.
bool is_listening_stream(int fd) {
    int value = 0;
    socklen_t len = sizeof value;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &len) != 0 || !value) return false;
    len = sizeof value;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &len) != 0 || value != SOCK_STREAM) return false;
    len = sizeof value;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &len) != 0) return false;
    return value == AF_INET || value == AF_INET6 || value == AF_UNIX;
}

// The path a Unix socket is bound to; empty for a TCP one.
std::string unix_path(int fd) {
    sockaddr_un a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sun_family != AF_UNIX) return {};
    return std::string(a.sun_path, ::strnlen(a.sun_path, sizeof a.sun_path));
}

}  // namespace

std::vector<inherited_socket> take_inherited_sockets() {
    const char* pid = std::getenv("LISTEN_PID");
    const char* count = std::getenv("LISTEN_FDS");
    std::vector<inherited_socket> out;
    if (pid && count && std::strtol(pid, nullptr, 10) == ::getpid()) {
        const long n = std::strtol(count, nullptr, 10);
        const auto names = split_names(std::getenv("LISTEN_FDNAMES"));
        for (long i = 0; i < n; ++i) {
            const int fd = first_fd + static_cast<int>(i);
            ::fcntl(fd, F_SETFD, FD_CLOEXEC);
            if (!is_listening_stream(fd))
                throw std::runtime_error("LISTEN_FDS: fd " + std::to_string(fd) +
                                         " is not a listening TCP or Unix socket (m0 serves streams only)");
            // Accepts are non-blocking in every listener strategy.
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
            out.push_back({fd, i < static_cast<long>(names.size()) ? names[i] : std::string(), bound_endpoint(fd),
                           unix_path(fd)});
        }
    }
    ::unsetenv("LISTEN_PID");
    ::unsetenv("LISTEN_FDS");
    ::unsetenv("LISTEN_FDNAMES");
    return out;
}

void pass_sockets_to_exec(const std::vector<inherited_socket>& sockets) {
    // First out of the way of 3, 4, ..., which some of them may occupy.
    const int high = first_fd + static_cast<int>(sockets.size());
    std::vector<int> moved;
    for (const auto& s : sockets) moved.push_back(::fcntl(s.fd, F_DUPFD_CLOEXEC, high));
    std::string names;
    for (std::size_t i = 0; i < sockets.size(); ++i) {
        // dup2 clears close-on-exec on the new fd.
        ::dup2(moved[i], first_fd + static_cast<int>(i));
        ::close(moved[i]);
        names += (i ? ":" : "") + sockets[i].name;
    }
    ::setenv("LISTEN_FDS", std::to_string(sockets.size()).c_str(), 1);
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDNAMES", names.c_str(), 1);
}

}  // namespace m0
