#include "telemetry/metrics_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <m0/log.hpp>

#include <m0/listen_socket.hpp>
#include "telemetry/metrics_table.hpp"
#include "telemetry/signal_free_thread.hpp"
#include "telemetry/status_page.hpp"

namespace m0::telemetry {

namespace {
constexpr std::size_t max_request_head = 8192;
constexpr std::chrono::seconds head_timeout{2};
constexpr std::chrono::seconds answer_timeout{10};
constexpr std::size_t max_stream_backlog = 1024 * 1024;

std::string response_head(std::string_view status, std::string_view type, std::size_t length) {
    std::string out = "HTTP/1.1 ";
    out.append(status).append("\r\nContent-Type: ").append(type);
    out += "\r\nContent-Length: " + std::to_string(length) + "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
    return out;
}

// One Server-Sent Event carrying a status.json snapshot (one line of JSON).
std::string status_event(std::string json) {
    while (!json.empty() && json.back() == '\n') json.pop_back();
    return "data: " + json + "\n\n";
}
}  // namespace

struct metrics_server::connection {
    explicit connection(int f) : fd(f), deadline(clock::now() + head_timeout) {}
    ~connection() { ::close(fd); }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    int fd;
    std::string in;
    std::string out;
    std::size_t sent = 0;
    bool answered = false;  // the request was read; `out` holds (the start of) the answer
    bool stream = false;    // /status/stream: kept open, a snapshot a second
    bool done = false;      // close it now
    bool eof = false;       // the client sent its FIN: nothing more to read
    clock::time_point deadline;  // of the head, then of the answer; none for a stream
};

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
    connections_.clear();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
}

void metrics_server::start() {
    std::unique_lock lock(fork_guard_);
    thread_ = start_signal_free_thread([this] { run(); });
    // Until run() holds the guard the new thread may be inside its own start
    // (the sanitizers allocate there): a fork must wait for it.
    running_.wait(lock, [&] { return started_; });
}

void metrics_server::forget_in_child() noexcept {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
    listen_fd_ = stop_fd_ = -1;
}

void metrics_server::pause_for_fork() { fork_guard_.lock(); }
void metrics_server::resume_after_fork() { fork_guard_.unlock(); }

void metrics_server::run() {
    // The guard is held but inside poll(): a fork (pause_for_fork) then finds
    // this thread holding no lock of the allocator, the log or anything else.
    std::unique_lock guard(fork_guard_);
    started_ = true;
    running_.notify_all();
    pthread_setname_np(pthread_self(), "m0-metrics");
    ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
    std::vector<pollfd> fds;
    for (;;) {
        const auto now = clock::now();
        bool streams = false;
        auto wake_at = clock::time_point::max();
        fds.clear();
        fds.push_back({stop_fd_, POLLIN, 0});
        // A full house is not accepted from until one leaves: the backlog waits.
        fds.push_back({connections_.size() < max_connections ? listen_fd_ : -1, POLLIN, 0});
        for (auto& c : connections_) {
            // A stream is read too, only to see its client leave.
            short events = c->eof ? 0 : POLLIN;
            if (c->sent < c->out.size()) events |= POLLOUT;
            fds.push_back({c->fd, events, 0});
            streams = streams || c->stream;
            if (!c->stream) wake_at = std::min(wake_at, c->deadline);
        }
        if (streams) wake_at = std::min(wake_at, next_tick_);
        int timeout = -1;
        if (wake_at != clock::time_point::max())
            timeout = static_cast<int>(std::max<long long>(
                0, std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now).count() + 1));
        guard.unlock();
        const int ready = ::poll(fds.data(), fds.size(), timeout);
        const int poll_errno = errno;
        guard.lock();
        if (ready < 0) {
            if (poll_errno == EINTR) continue;
            errno = poll_errno;
            log::error(std::string("metrics: poll failed: ") + std::strerror(errno));
            return;
        }
        if (fds[0].revents) return;
        for (std::size_t i = 0; i < connections_.size(); ++i) {
            auto& c = *connections_[i];
            const short ev = fds[i + 2].revents;
            if (ev & (POLLIN | POLLHUP | POLLERR)) on_readable(c);
            if (!c.done && (ev & POLLOUT)) on_writable(c);
        }
        if (fds[1].revents) accept_all();
        if (streams && clock::now() >= next_tick_) tick_streams();
        const auto later = clock::now();
        std::erase_if(connections_, [&](const std::unique_ptr<connection>& c) {
            return c->done || (!c->stream && later >= c->deadline);
        });
    }
}

void metrics_server::accept_all() {
    while (connections_.size() < max_connections) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;  // none left (EAGAIN), gone before we took it, or out of fds: poll again
        connections_.push_back(std::make_unique<connection>(fd));
    }
}

void metrics_server::on_readable(connection& c) {
    char buf[2048];
    for (;;) {
        const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) {
            c.done = true;  // reset
            return;
        }
        if (n == 0) {
            c.eof = true;
            break;
        }
        if (c.answered) continue;  // a client may send more; only its first request counts
        c.in.append(buf, static_cast<std::size_t>(n));
        if (c.in.size() > max_request_head) {
            c.done = true;
            return;
        }
    }
    if (!c.answered && c.in.find("\r\n\r\n") != std::string::npos) {
        dispatch(c);
        on_writable(c);
    }
    // A client that half-closed after its request still gets the answer;
    // a stream whose client left ends.
    if (c.eof && (c.stream || !c.answered)) c.done = true;
}

void metrics_server::on_writable(connection& c) {
    while (c.sent < c.out.size()) {
        const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) {
            c.done = true;
            return;
        }
        c.sent += static_cast<std::size_t>(n);
    }
    c.out.clear();
    c.sent = 0;
    if (c.answered && !c.stream) c.done = true;
}

void metrics_server::dispatch(connection& c) {
    c.answered = true;
    c.deadline = clock::now() + answer_timeout;
    const auto line_end = c.in.find("\r\n");
    const std::string_view line = std::string_view(c.in).substr(0, line_end);
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    auto answer = [&](std::string_view status, std::string_view type, const std::string& body, bool head) {
        c.out = response_head(status, type, body.size());
        if (!head) c.out += body;
    };
    if (sp2 == std::string_view::npos) return answer("400 Bad Request", "text/plain", "Bad Request\n", false);
    const std::string_view method = line.substr(0, sp1);
    std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    const bool head_only = method == "HEAD";
    if (method != "GET" && !head_only)
        return answer("405 Method Not Allowed", "text/plain", "Method Not Allowed\n", false);
    if (path == "/metrics")
        return answer("200 OK", "text/plain; version=0.0.4; charset=utf-8", table_.prometheus(), head_only);
    if (path == "/status.json") return answer("200 OK", "application/json", table_.status_json(), head_only);
    if (path == "/status" || path == "/status/")
        return answer("200 OK", "text/html; charset=utf-8", std::string(status_page_html()), head_only);
    if (path == "/status/stream") {
        if (table_.deployment_draining())
            return answer("503 Service Unavailable", "text/plain", "Draining: no new stream\n", head_only);
        c.out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                "Connection: close\r\n\r\n";
        if (head_only) return;
        c.stream = true;
        // The first snapshot at once; then one a second with the others.
        c.out += "retry: 2000\n\n" + status_event(table_.status_json());
        if (next_tick_ < clock::now()) next_tick_ = clock::now() + stream_interval;
        return;
    }
    answer("404 Not Found", "text/plain",
           "Not Found: this listener serves /metrics, /status.json, /status and /status/stream\n", head_only);
}

void metrics_server::tick_streams() {
    next_tick_ = clock::now() + stream_interval;
    if (table_.deployment_draining()) {
        // m0 stops: each stream says so and ends, so a client does not wait on a dead socket.
        for (auto& c : connections_) {
            if (!c->stream || c->done) continue;
            c->out += "event: end\ndata: draining\n\n";
            c->stream = false;
            c->deadline = clock::now() + answer_timeout;
            on_writable(*c);
        }
        return;
    }
    const std::string event = status_event(table_.status_json());
    for (auto& c : connections_) {
        if (!c->stream || c->done) continue;
        if (c->out.size() - c->sent > max_stream_backlog) {
            c->done = true;  // a reader this far behind is not reading
            continue;
        }
        c->out += event;
        on_writable(*c);
    }
}

}  // namespace m0::telemetry
