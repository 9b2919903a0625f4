#pragma once
// What the libFuzzer targets over the engine's sessions share
// (http_parser_fuzz: HTTP/1.1, http2_fuzz: HTTP/2): a real session of the
// engine over one end of a socketpair, handed to http::serve() by a listener
// of our own; the client's bytes sent in pieces from a small PRNG; the
// io_context polled, never run with waits, so that a timer fires only where
// the timing byte lets the clock pass its deadline; then a drain, the
// client's EOF and a force-close, after which no connection and no request
// may be left.
//
// The timing byte (bit 0) shortens every timeout (header, body, write,
// keep-alive) to a millisecond and then says when they may fire: before any
// of the first pieces (bits 1-4, one per piece), while the client stops
// reading (bit 5: the write timeout), after the last byte (bit 7: the
// keep-alive timeout); bit 6 drains the connection before the force-close.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <m0/http.hpp>
#include <m0/reactor.hpp>

#include "http/client_policy.hpp"

namespace m0::fuzz {

namespace asio = boost::asio;

inline void check(bool ok) {
    if (!ok) std::abort();
}

// Split sizes from a small PRNG seeded by the control byte: bits 1-3 give
// the largest piece (0: everything at once), bits 4-7 the seed.
class splitter {
public:
    explicit splitter(std::uint8_t control)
        : max_((control >> 1) & 7 ? std::size_t{1} << ((control >> 1) & 7) : 0), state_(0x9e3779b9u ^ (control >> 4)) {}
    std::size_t next(std::size_t left) {
        if (max_ == 0) return left;
        state_ ^= state_ << 13;
        state_ ^= state_ >> 17;
        state_ ^= state_ << 5;
        return std::min<std::size_t>(left, 1 + state_ % max_);
    }

private:
    std::size_t max_;
    std::uint32_t state_;
};

// Hands the server end of the socketpair to the engine, once.
class pair_listener final : public m0::listener {
public:
    pair_listener(asio::io_context& io, int fd) : io_(io), fd_(fd) {}
    ~pair_listener() override {
        if (fd_ >= 0) ::close(fd_);
    }
    void async_accept(accept_handler handler) override {
        if (fd_ < 0) {
            held_ = std::move(handler);  // one connection only; released at teardown
            return;
        }
        asio::ip::tcp::socket socket(io_);
        boost::system::error_code ec;
        socket.assign(asio::ip::tcp::v4(), fd_, ec);
        if (ec) std::abort();
        fd_ = -1;
        asio::post(io_, [h = std::move(handler), s = std::move(socket)]() mutable { h({}, std::move(s)); });
    }
    asio::ip::tcp::endpoint local_endpoint() const override { return {}; }
    void release() { held_ = nullptr; }

private:
    asio::io_context& io_;
    int fd_;
    accept_handler held_;
};

// Answers by `kind` (the path's second byte), to reach every response path
// both engines share: inline, deferred, streamed, aborted, dropped,
// bodiless, large...
inline void answer_by_kind(const m0::http::exchange_ptr& ex, char kind) {
    const auto& r = ex->req();
    switch (kind) {
    case 's':  // streamed, chunked (close-delimited on HTTP/1.0)
        ex->begin(200, {{"X-Kind", "stream"}}, std::nullopt);
        ex->write("part one,");
        ex->write(std::string(r.body));
        ex->end();
        break;
    case 'l':  // streamed with its length
        ex->begin(200, {}, r.body.size() + 2);
        ex->write("<<");
        ex->write(std::string(r.body));
        ex->end();
        break;
    case 'a':  // error mid-body
        ex->begin(200, {}, std::nullopt);
        ex->write("partial");
        ex->abort();
        break;
    case 'w':  // more than announced
        ex->begin(200, {}, 3);
        ex->write("toolong");
        ex->end();
        break;
    case 'u':  // fewer than announced
        ex->begin(200, {}, 30);
        ex->write("short");
        ex->end();
        break;
    case 'd':  // answered later, from the reactor
        asio::post(ex->io(), [ex] { ex->respond(200, {}, "later"); });
        break;
    case 'x':  // dropped without an answer: the engine answers 500
        break;
    case 'b':  // more than the socket buffers hold: the write timeout's path
        ex->begin(200, {}, std::nullopt);
        for (int i = 0; i < 4; ++i) ex->write(std::string(64 * 1024, 'b'));
        ex->end();
        break;
    case 'n': ex->respond(204, {}, "dropped body"); break;
    case 'm': ex->respond(304, {}, "dropped body"); break;
    case 'f':  // the engine owns framing and must drop these
        ex->respond(200, {{"Content-Length", "99"}, {"Transfer-Encoding", "chunked"}, {"Bad", "a\r\nb"}}, "x");
        break;
    default: ex->respond(200, {{"Content-Type", "text/plain"}}, std::string(r.body)); break;
    }
}

inline char kind_of(const m0::http::request& r) { return r.path.size() > 1 ? r.path[1] : '-'; }

inline void read_all(int fd, std::string& out) {
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return;
        if (out.size() < (1u << 20)) out.append(buf, static_cast<std::size_t>(n));
    }
}

// Timeouts of the timing byte's bit 0, and how long the harness lets the
// clock run for them to pass: short, because each pause costs the fuzzer
// runs (a timer that fires earlier than asked, on a slow pass, is a timing
// the engine must survive as well). At most max_pauses per input.
constexpr std::chrono::milliseconds short_timeout{1};
constexpr std::chrono::microseconds timer_pause{1500};
constexpr int max_pauses = 3;

class session_driver {
public:
    // last_pause: the pause after the last byte (timing bit 7) instead of
    // timer_pause.
    session_driver(asio::io_context& io, int client, std::uint8_t timing, std::chrono::microseconds last_pause)
        : io_(io), client_(client), timing_(timing), last_pause_(last_pause) {}

    // Runs what is ready; the client reads what arrived unless it stopped.
    void settle() {
        for (int i = 0; i < 64; ++i) {
            if (reading_) read_all(client_, received_);
            if (io_.poll() == 0) break;
            io_.restart();
        }
        if (reading_) read_all(client_, received_);
    }

    // With short timeouts: lets the clock pass them, then runs the timers.
    void let_timers_fire(std::chrono::microseconds pause = timer_pause) {
        if (!(timing_ & 1) || pauses_ == max_pauses) return;
        ++pauses_;
        std::this_thread::sleep_for(pause);
        settle();
    }

    void send(const char* data, std::size_t size, std::uint8_t control) {
        splitter split(control);
        std::size_t sent = 0;
        for (unsigned piece = 0; sent < size; ++piece) {
            if (piece < 4 && (timing_ >> (1 + piece)) & 1) let_timers_fire();
            if (piece == 0 && (timing_ & 0x20)) reading_ = false;  // until the end
            const std::size_t n = split.next(size - sent);
            std::size_t done = 0;
            while (done < n) {
                const ssize_t w = ::send(client_, data + sent + done, n - done, MSG_NOSIGNAL);
                if (w <= 0) break;  // closed by the server, or its buffer is full
                done += static_cast<std::size_t>(w);
            }
            settle();
            if (done < n) break;
            sent += n;
        }
        if (!reading_) let_timers_fire();  // a response blocked on the client
        if (timing_ & 0x80) let_timers_fire(last_pause_);
    }

    std::string finish() {
        reading_ = true;
        settle();
        return std::move(received_);
    }

private:
    asio::io_context& io_;
    const int client_;
    const std::uint8_t timing_;
    const std::chrono::microseconds last_pause_;
    bool reading_ = true;
    int pauses_ = 0;
    std::string received_;
};

struct session_setup {
    m0::http_limits limits;
    const m0::http::client_policy* policy = nullptr;  // null: HTTP/1.1 only
    // How long the clock runs after the last byte (timing bit 7): longer
    // for a timer that ticks more coarsely than the timeouts.
    std::chrono::microseconds last_pause = timer_pause;
};

// One connection of the engine, from the client's first byte to the
// force-close: the client's bytes in pieces (the control byte's bits 1-7,
// bit 7 also the client's EOF after them), the timing byte's timers and
// drain. Returns what the client received.
inline std::string run_session(session_setup setup, m0::http::handler& handler, std::uint8_t control,
                               std::uint8_t timing, std::string_view client_bytes) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
    const int client = fds[0];
    ::fcntl(client, F_SETFL, O_NONBLOCK);
    std::string received;
    {
        auto& limits = setup.limits;
        if (timing & 1)
            limits.header_timeout = limits.body_timeout = limits.write_timeout = limits.keepalive_timeout =
                short_timeout;
        m0::reactor_stats stats;
        asio::io_context io(1);
        pair_listener listener(io, fds[1]);
        m0::reactor_context ctx;
        ctx.io = &io;
        ctx.listeners.push_back(&listener);
        ctx.stats = &stats;
        ctx.limits = &limits;
        ctx.client_policy = setup.policy;
        m0::http::serve(ctx, handler);
        session_driver driver(io, client, timing, setup.last_pause);
        driver.settle();
        driver.send(client_bytes.data(), client_bytes.size(), control);
        if (control & 0x80) {
            ::shutdown(client, SHUT_WR);  // the client's EOF path
            driver.settle();
        }
        if (timing & 0x40) {
            // A drain: idle connections close, a request in flight may finish.
            ctx.run_drain_hooks();
            driver.settle();
            driver.let_timers_fire();
        }
        received = driver.finish();
        ctx.run_force_close_hooks();
        listener.release();
        io.restart();
        io.run();
        check(stats.live_connections.load() == 0);
        check(stats.in_flight.load() == 0);
        read_all(client, received);
    }
    ::close(client);
    return received;
}

}  // namespace m0::fuzz
