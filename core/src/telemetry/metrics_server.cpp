#include "telemetry/metrics_server.hpp"

#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include <m0/log.hpp>

#include "scheduler/listen_socket.hpp"
#include "telemetry/metrics_table.hpp"

namespace m0::telemetry {

namespace {
constexpr std::size_t max_request_head = 8192;

void write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
}

void answer(int fd, std::string_view status, std::string_view type, const std::string& body, bool head) {
    std::string out = "HTTP/1.1 ";
    out.append(status).append("\r\nContent-Type: ").append(type);
    out += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    if (!head) out += body;
    write_all(fd, out);
}
}  // namespace

metrics_server::metrics_server(boost::asio::ip::tcp::endpoint& address, const metrics_table& table)
    : table_(table) {
    listen_fd_ = open_listen_socket(address, false, 64);
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

metrics_server::~metrics_server() {
    if (thread_.joinable()) {
        const std::uint64_t one = 1;
        (void)!::write(stop_fd_, &one, sizeof one);
        thread_.join();
    }
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
}

void metrics_server::start() {
    // Signals are the serving thread's (or the supervisor's) to take: a
    // SIGCHLD or SIGQUIT delivered here would be lost or kill the process.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void metrics_server::forget_in_child() noexcept {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
    listen_fd_ = stop_fd_ = -1;
}

void metrics_server::run() {
    pthread_setname_np(pthread_self(), "m0-metrics");
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            log::error(std::string("metrics: poll failed: ") + std::strerror(errno));
            return;
        }
        if (fds[1].revents) return;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;  // gone before we took it, or out of fds: poll again
        serve_one(fd);
        ::close(fd);
    }
}

void metrics_server::serve_one(int fd) {
    // Blocking I/O with timeouts: a stuck scraper holds this thread for at most that long.
    timeval timeout{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    std::string head;
    char buf[2048];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < max_request_head) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        head.append(buf, static_cast<std::size_t>(n));
    }
    const auto line_end = head.find("\r\n");
    const std::string_view line = std::string_view(head).substr(0, line_end);
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (line_end == std::string::npos || sp2 == std::string_view::npos) {
        answer(fd, "400 Bad Request", "text/plain", "Bad Request\n", false);
        return;
    }
    const std::string_view method = line.substr(0, sp1);
    std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    const bool head_only = method == "HEAD";
    if (method != "GET" && !head_only) {
        answer(fd, "405 Method Not Allowed", "text/plain", "Method Not Allowed\n", false);
        return;
    }
    if (path == "/metrics")
        answer(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", table_.prometheus(), head_only);
    else if (path == "/status.json")
        answer(fd, "200 OK", "application/json", table_.status_json(), head_only);
    else
        answer(fd, "404 Not Found", "text/plain", "Not Found: this listener serves /metrics and /status.json\n", head_only);
}

}  // namespace m0::telemetry
