#include "server/sd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include <m0/log.hpp>

namespace m0 {

void sd_notify(std::string_view state) {
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (!path || !*path) return;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::size_t len = std::strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof addr.sun_path) {
        log::warning("NOTIFY_SOCKET: '" + std::string(path) + "' is not a unix socket path or abstract name");
        return;
    }
    std::memcpy(addr.sun_path, path, len);
    if (path[0] == '@') addr.sun_path[0] = '\0';  // the abstract namespace
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
    if (::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), addr_len) < 0) {
        static bool warned = false;
        if (!warned) log::warning("NOTIFY_SOCKET: cannot notify " + std::string(path) + ": " + std::strerror(errno));
        warned = true;
    }
    ::close(fd);
}

}  // namespace m0
