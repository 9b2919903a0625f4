#include "test_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace m0::test {

test_client::test_client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};  // a broken server fails the test instead of hanging it
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error("connect failed");
}

std::size_t accept_backlog(std::uint16_t port) {
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the column names
    char local[32];
    std::snprintf(local, sizeof local, "0100007F:%04X", port);  // 127.0.0.1 as the kernel writes it
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local_address, remote_address, state, queues;
        fields >> slot >> local_address >> remote_address >> state >> queues;
        if (local_address != local || state != "0A") continue;  // 0A: listening
        return std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16);
    }
    return 0;
}

std::string post(const std::string& path, const std::string& body, const std::string& extra) {
    return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
           "\r\n" + body;
}

test_client::~test_client() { close(); }

void test_client::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void test_client::reset() {
    if (fd_ < 0) return;
    linger l{};
    l.l_onoff = 1;
    l.l_linger = 0;
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
}

void test_client::shutdown_send() { ::shutdown(fd_, SHUT_WR); }

void test_client::send(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n <= 0) throw std::runtime_error("send failed");
        off += static_cast<std::size_t>(n);
    }
}

bool test_client::fill() {
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
}

std::string test_client::read_exact(std::size_t n) {
    while (buf_.size() < n && fill()) {}
    std::string out = buf_.substr(0, std::min(n, buf_.size()));
    buf_.erase(0, out.size());
    return out;
}

std::optional<http_response> test_client::read_response(bool head) {
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
        if (!fill()) return std::nullopt;
    const std::string head_text = buf_.substr(0, end + 2);
    buf_.erase(0, end + 4);

    http_response r;
    std::size_t line_end = head_text.find("\r\n");
    const std::string status_line = head_text.substr(0, line_end);
    if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) return std::nullopt;
    r.status = std::stoi(status_line.substr(9, 3));
    std::size_t pos = line_end + 2;
    while (pos < head_text.size()) {
        const std::size_t e = head_text.find("\r\n", pos);
        const std::string line = head_text.substr(pos, e - pos);
        pos = e + 2;
        const auto colon = line.find(':');
        if (colon == std::string::npos) return std::nullopt;
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        r.headers[name] = value;
    }
    if (head || r.status / 100 == 1 || r.status == 204 || r.status == 304) return r;

    if (r.has("content-length")) {
        const std::size_t n = std::stoull(r.get("content-length"));
        r.body = read_exact(n);
        if (r.body.size() != n) return std::nullopt;
    } else if (r.get("transfer-encoding") == "chunked") {
        for (;;) {
            std::size_t le;
            while ((le = buf_.find("\r\n")) == std::string::npos)
                if (!fill()) return std::nullopt;
            const std::size_t size = std::stoull(buf_.substr(0, le), nullptr, 16);
            buf_.erase(0, le + 2);
            const std::string data = read_exact(size + 2);
            if (data.size() != size + 2 || data.substr(size) != "\r\n") return std::nullopt;
            if (size == 0) break;
            r.body += data.substr(0, size);
        }
    } else {
        while (fill()) {}
        r.body = std::move(buf_);
        buf_.clear();
    }
    return r;
}

bool test_client::closed_by_peer() {
    if (!buf_.empty()) return false;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n > 0) buf_.push_back(c);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

}  // namespace m0::test
