#pragma once
// A blocking raw-socket HTTP/1.1 client for the engine tests: sends bytes
// exactly as given and parses responses strictly enough to notice framing
// mistakes (a stray body byte breaks the next response).
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace m0::test {

struct http_response {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
    bool has(const std::string& name) const { return headers.count(name) != 0; }
    std::string get(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

// Connections waiting in the accept queue of the loopback listener on `port`
// (from /proc/net/tcp: a listening socket's receive queue is its backlog).
std::size_t accept_backlog(std::uint16_t port);

// A POST with a Content-Length body; `extra` holds more header lines.
std::string post(const std::string& path, const std::string& body, const std::string& extra = "");

class test_client {
public:
    explicit test_client(std::uint16_t port);
    ~test_client();
    test_client(const test_client&) = delete;
    test_client& operator=(const test_client&) = delete;

    void send(const std::string& bytes);
    // One response; no body is read for HEAD (`head`), 1xx, 204 and 304.
    // nullopt if the connection ended (or 5 s passed) first.
    std::optional<http_response> read_response(bool head = false);
    // Exactly n raw bytes, or what arrived before the end.
    std::string read_exact(std::size_t n);
    // True once the server closed the connection with nothing left unread.
    bool closed_by_peer();
    void close();
    // Closes with SO_LINGER 0: the server sees a reset, not an end of stream.
    void reset();
    // shutdown(SHUT_WR): the server sees the end of the request stream while
    // this side still reads.
    void shutdown_send();
    int fd() const { return fd_; }

private:
    bool fill();
    int fd_ = -1;
    std::string buf_;
};

}  // namespace m0::test
