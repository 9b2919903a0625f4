// libFuzzer target over the HTTP/1.1 engine: the request parser and the
// connection state machine, its timers, drain and force-close.
//
// Input: a control byte, a timing byte, then the bytes a client sends. The
// control byte picks the limits (engine defaults or small ones, so the limit
// paths are reachable with short inputs) and how the stream is split into
// reads. The timing byte (bit 0) shortens every timeout (header, body,
// write, keep-alive) to a millisecond and then says when they may fire:
// before any of the first pieces (bits 1-4, one per piece), while the client
// stops reading (bit 5: the write timeout), after the last byte (bit 7: the
// keep-alive timeout); bit 6 drains the connection before the force-close.
//
// Each input runs twice:
//  1. through request_parser alone, the way a connection feeds it
//     (consumed bytes dropped, pipelined requests one after the other),
//     checking the parse's invariants;
//  2. through a real session of the engine, over one end of a socketpair
//     handed to http::serve() by a listener of our own, with a handler whose
//     answer depends on the path (inline, deferred, streamed, aborted,
//     dropped, bodiless, large...). The io_context is polled, never run with
//     waits; a timer fires only where the timing byte lets the clock pass
//     its deadline.
// Crashes, leaks, sanitizer reports and an answer that does not parse as
// HTTP/1.1 responses (response_oracle) fail the run.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <m0/http.hpp>
#include <m0/log.hpp>
#include <m0/reactor.hpp>

#include "http1/char_class.hpp"
#include "http1/request_parser.hpp"

namespace {

namespace asio = boost::asio;
using m0::http::detail::parse_status;
using m0::http::detail::request_data;
using m0::http::detail::request_parser;

void check(bool ok) {
    if (!ok) std::abort();
}

m0::http_limits limits_for(std::uint8_t control) {
    m0::http_limits limits;
    if (control & 1) {
        limits.max_request_line = 64;
        limits.max_header_size = 64;
        limits.max_header_count = 4;
        limits.max_header_bytes = 192;
        limits.max_body_size = 32;
    }
    return limits;
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

bool inside(std::string_view v, const std::string& owner) {
    return v.empty() || (v.data() >= owner.data() && v.data() + v.size() <= owner.data() + owner.size());
}

void check_request(const request_data& d, const m0::http_limits& limits) {
    const auto& r = d.req;
    check(!r.method.empty() && inside(r.method, d.head));
    for (char c : r.method) check(m0::http::detail::is(c, m0::http::detail::cc_tchar));
    check(!r.target.empty() && inside(r.target, d.head));
    // Bytes >= 0x80 pass through; controls, SP and DEL never reach a handler.
    for (char c : r.target) check(static_cast<unsigned char>(c) > 0x20 && c != 0x7f);
    check(r.version == 10 || r.version == 11);
    check(r.headers.size() <= limits.max_header_count);
    check(d.head.size() <= limits.max_header_bytes);
    check(r.body.size() <= limits.max_body_size);
    for (const auto& h : r.headers) {
        check(!h.name.empty() && inside(h.name, d.head) && inside(h.value, d.head));
        for (char c : h.value) check(c != '\r' && c != '\n' && c != '\0');
    }
}

// Pass 1: the parser alone, fed like a connection feeds it.
void fuzz_parser(std::uint8_t control, const char* data, std::size_t size) {
    const auto limits = limits_for(control);
    request_parser parser(limits);
    request_data out;
    splitter split(control);
    std::string buffer;
    std::size_t sent = 0;
    bool started = false;
    for (;;) {
        if (!started) {
            out.clear();
            parser.start(out);
            started = true;
        }
        // An allocation of exactly the unconsumed bytes, so that reading one
        // byte past them is a sanitizer report (a std::string has slack).
        const std::unique_ptr<char[]> exact(new char[buffer.size()]);
        std::memcpy(exact.get(), buffer.data(), buffer.size());
        std::size_t used = 0;
        const auto st = parser.feed(exact.get(), buffer.size(), used);
        check(used <= buffer.size());
        buffer.erase(0, used);
        if (st == parse_status::error) {
            const unsigned s = parser.error_status();
            check(s == 400 || s == 413 || s == 414 || s == 431 || s == 501 || s == 505);
            check(!parser.error_reason().empty());
            return;  // the connection closes
        }
        if (st == parse_status::head_done) {
            check(parser.head_done() && parser.body_pending());
            continue;
        }
        if (st == parse_status::complete) {
            check_request(out, limits);
            parser.stop();
            started = false;
            continue;
        }
        if (sent == size) return;
        const std::size_t n = split.next(size - sent);
        buffer.append(data + sent, n);
        sent += n;
    }
}

// Pass 2: a session of the engine over a socketpair.

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

// Answers by the path's second byte, to reach every response path.
class fuzz_handler final : public m0::http::handler {
public:
    void on_request(m0::http::exchange_ptr ex) override {
        const auto& r = ex->req();
        const char kind = r.path.size() > 1 ? r.path[1] : '-';
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
};

// The answer must parse, whole, as HTTP/1.1 responses one after the other
// (status line, field syntax, unambiguous framing); only the last may be cut
// short, by an abort, a force-close or the capture cap. Echoed request bytes,
// a body longer than its framing or a field with CR/LF all fail. Responses to
// HEAD have no body whatever their framing says, and the oracle does not know
// which requests were HEAD: with "HEAD" in the input it checks only the first
// response's head.
class response_oracle {
public:
    explicit response_oracle(std::string_view in) : in_(in) {}

    void check_all(bool follow_bodies) {
        while (pos_ < in_.size() && next_response(follow_bodies)) {
        }
    }

private:
    // The next line without its CRLF; nullopt when the stream ends first.
    std::optional<std::string_view> line() {
        const auto end = in_.find("\r\n", pos_);
        if (end == std::string_view::npos) return std::nullopt;
        const auto l = in_.substr(pos_, end - pos_);
        pos_ = end + 2;
        return l;
    }

    bool take(std::size_t n) {
        if (in_.size() - pos_ < n) return false;
        pos_ += n;
        return true;
    }

    static bool hex_digits(std::string_view s) {
        if (s.empty() || s.size() > 8) return false;
        for (char c : s)
            if (!m0::http::detail::is(c, m0::http::detail::cc_hex)) return false;
        return true;
    }

    // Reads one response; false when the stream ended inside it (or when
    // the rest is not followed).
    bool next_response(bool follow_bodies) {
        const std::string_view prefix = "HTTP/1.1 ";
        const auto rest = in_.substr(pos_, prefix.size());
        check(prefix.substr(0, rest.size()) == rest);
        const auto status_line = line();
        if (!status_line) return false;
        check(status_line->size() >= 13 && (*status_line)[12] == ' ');
        const auto code = status_line->substr(9, 3);
        for (char c : code) check(c >= '0' && c <= '9');
        for (char c : status_line->substr(13)) check(m0::http::detail::is(c, m0::http::detail::cc_field_value));
        const int status = std::stoi(std::string(code));

        std::size_t lengths = 0, codings = 0;
        std::string_view length, coding;
        for (;;) {
            const auto field = line();
            if (!field) return false;
            if (field->empty()) break;
            const auto colon = field->find(':');
            check(colon != std::string_view::npos && colon > 0);
            for (char c : field->substr(0, colon)) check(m0::http::detail::is(c, m0::http::detail::cc_tchar));
            auto value = field->substr(colon + 1);
            for (char c : value) check(m0::http::detail::is(c, m0::http::detail::cc_field_value));
            while (!value.empty() && m0::http::detail::is_ows(value.front())) value.remove_prefix(1);
            while (!value.empty() && m0::http::detail::is_ows(value.back())) value.remove_suffix(1);
            const auto name = field->substr(0, colon);
            if (m0::http::detail::token_equals(name, "content-length")) ++lengths, length = value;
            if (m0::http::detail::token_equals(name, "transfer-encoding")) ++codings, coding = value;
        }
        // RFC 9112 6.1-6.3, RFC 9110 8.6: one framing, none on 1xx and 204.
        check(lengths <= 1 && !(lengths && codings));
        if (status < 200 || status == 204) check(lengths == 0 && codings == 0);
        if (status < 200 || status == 204 || status == 304) return true;
        if (!follow_bodies) return false;
        if (codings) {
            check(coding.size() >= 7 && m0::http::detail::token_equals(coding.substr(coding.size() - 7), "chunked"));
            for (;;) {
                const auto size_line = line();
                if (!size_line) return false;
                const auto digits = size_line->substr(0, size_line->find(';'));
                check(hex_digits(digits));
                const auto size = std::stoul(std::string(digits), nullptr, 16);
                if (size == 0) break;
                if (!take(size)) return false;
                const auto end = line();
                if (!end) {
                    check(in_.substr(pos_) == "" || in_.substr(pos_) == "\r");  // cut, not overrun
                    return false;
                }
                check(end->empty());
            }
            for (;;) {  // trailer section
                const auto trailer = line();
                if (!trailer) return false;
                if (trailer->empty()) return true;
            }
        }
        if (lengths) {
            check(!length.empty() && length.size() <= 12 &&
                  length.find_first_not_of("0123456789") == std::string_view::npos);
            return take(std::stoul(std::string(length)));
        }
        pos_ = in_.size();  // close-delimited: the rest is the body
        return false;
    }

    std::string_view in_;
    std::size_t pos_ = 0;
};

void read_all(int fd, std::string& out) {
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
    session_driver(asio::io_context& io, int client, std::uint8_t timing)
        : io_(io), client_(client), timing_(timing) {}

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
    void let_timers_fire() {
        if (!(timing_ & 1) || pauses_ == max_pauses) return;
        ++pauses_;
        std::this_thread::sleep_for(timer_pause);
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
        if (timing_ & 0x80) let_timers_fire();
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
    bool reading_ = true;
    int pauses_ = 0;
    std::string received_;
};

void fuzz_session(std::uint8_t control, std::uint8_t timing, const char* data, std::size_t size) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
    const int client = fds[0];
    ::fcntl(client, F_SETFL, O_NONBLOCK);
    std::string received;
    {
        auto limits = limits_for(control);
        if (timing & 1)
            limits.header_timeout = limits.body_timeout = limits.write_timeout = limits.keepalive_timeout =
                short_timeout;
        m0::reactor_stats stats;
        asio::io_context io(1);
        pair_listener listener(io, fds[1]);
        fuzz_handler handler;
        m0::reactor_context ctx;
        ctx.io = &io;
        ctx.listeners.push_back(&listener);
        ctx.stats = &stats;
        ctx.limits = &limits;
        m0::http::serve(ctx, handler);
        session_driver driver(io, client, timing);
        driver.settle();
        driver.send(data, size, control);
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
    response_oracle(received).check_all(std::string_view(data, size).find("HEAD") == std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // One log line per rejected request would flood the fuzzer's output.
    m0::log::set_level(m0::log::level::warning);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::uint8_t control = data[0], timing = data[1];
    const char* stream = reinterpret_cast<const char*>(data + 2);
    fuzz_parser(control, stream, size - 2);
    fuzz_session(control, timing, stream, size - 2);
    return 0;
}
