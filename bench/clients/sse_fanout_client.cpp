// The client of bench/sse_fanout: holds N Server-Sent Events streams on one
// thread (plain Asio, a few KiB each, so 10,000 fit easily) and measures the
// delivery latency of every event: each event's data is "<publish time> <seq>",
// the publish time in CLOCK_MONOTONIC nanoseconds, stamped by the server's
// view as it publishes (same clock here, same machine).
//
//   sse_fanout_client HOST PORT PATH CONNECTIONS CONNECT_CONCURRENCY
//
// Opens CONNECTIONS streams, at most CONNECT_CONCURRENCY connecting at once.
// Each must answer 200 with Content-Type text/event-stream and a chunked body;
// anything else fails the run (exit 1, the reason on stderr). When every stream
// has its head it prints "held N", then obeys commands on stdin, one per line:
//
//   reset SEQ         forget what was counted, and count from now on only the
//                     events whose sequence number is SEQ or more (a slow
//                     server may still deliver earlier ones); prints "ok"
//   wait EVENTS MS    returns once EVENTS events arrived since the reset, or MS
//                     milliseconds passed; prints "ok" or "timeout"
//   report            prints "events=E min=A max=B p50_us=.. p99_us=.. max_us=..
//                     closed=C cpu=S": events since the reset, the fewest and most
//                     on one stream, latency percentiles, streams the server
//                     closed, and this process's CPU seconds since the reset
//   quit              exits 0
//
// Comment lines (the heartbeat) are skipped; an event whose data does not
// start "<integer> <integer>" fails the run.
#include "client_support.hpp"

#include <boost/asio.hpp>

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {

[[noreturn]] void fail(const std::string& what) { bench::fail("sse_fanout_client", what); }

std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What every stream reports to.
struct tally {
    std::vector<std::uint32_t> latency_us;  // one per event since the reset
    long long events = 0;
    long long min_seq = 0;  // events numbered below are not counted
    int closed = 0;
};

// One held stream: the response head, then a chunked body decoded into SSE
// lines. Only what an event needs is kept: the data line's two integers.
class stream {
public:
    stream(net::io_context& ioc, tally& t, int id) : socket_(ioc), tally_(t), id_(id) {}

    template <class Done>
    void start(const tcp::endpoint& ep, const std::string& request, Done on_head) {
        socket_.async_connect(ep, [this, &request, on_head](error_code ec) {
            if (ec)
                fail("stream " + std::to_string(id_) + ": connect: " + ec.message());
            net::async_write(socket_, net::buffer(request), [this, on_head](error_code e, std::size_t) {
                if (e)
                    fail("stream " + std::to_string(id_) + ": write: " + e.message());
                read_head(on_head);
            });
        });
    }

    long long events = 0;  // since the reset
    bool open = true;

private:
    template <class Done>
    void read_head(Done on_head) {
        net::async_read_until(socket_, net::dynamic_buffer(head_), "\r\n\r\n",
                              [this, on_head](error_code ec, std::size_t n) {
                                  if (ec)
                                      fail("stream " + std::to_string(id_) + ": response head: " + ec.message());
                                  check_head(std::string_view(head_).substr(0, n));
                                  std::string rest = head_.substr(n);
                                  head_.clear();
                                  head_.shrink_to_fit();
                                  on_head();
                                  feed(rest, now_ns());
                                  do_read();
                              });
    }

    void check_head(std::string_view head) {
        std::string lower(head);
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (lower.rfind("http/1.1 200", 0) != 0 || lower.find("content-type: text/event-stream") == std::string::npos ||
            lower.find("transfer-encoding: chunked") == std::string::npos)
            fail("stream " + std::to_string(id_) + ": expected 200, text/event-stream, chunked; got:\n" +
                 std::string(head));
    }

    void do_read() {
        socket_.async_read_some(net::buffer(buf_), [this](error_code ec, std::size_t n) {
            if (ec) {
                open = false;
                ++tally_.closed;
                return;
            }
            feed(std::string_view(buf_, n), now_ns());
            do_read();
        });
    }

    // Chunked framing: a hex size line, that many bytes, CRLF; a size of 0
    // ends the body (the server closed the stream).
    void feed(std::string_view in, std::int64_t now) {
        while (!in.empty()) {
            if (chunk_left_ > 0) {
                const auto take = std::min<std::size_t>(chunk_left_, in.size());
                sse(in.substr(0, take), now);
                chunk_left_ -= take;
                in.remove_prefix(take);
                if (chunk_left_ == 0)
                    skip_crlf_ = 2;
                continue;
            }
            if (skip_crlf_ > 0) {
                --skip_crlf_;
                in.remove_prefix(1);
                continue;
            }
            const char c = in.front();
            in.remove_prefix(1);
            if (c == '\n') {
                std::size_t size = 0;
                std::from_chars(size_line_.data(), size_line_.data() + size_line_.size(), size, 16);
                size_line_.clear();
                if (size == 0)
                    return;  // the last chunk: the close is counted on read
                chunk_left_ = size;
            } else if (c != '\r') {
                size_line_ += c;
            }
        }
    }

    // SSE lines: "data: <ns> <seq>" then a blank line ends the event.
    void sse(std::string_view in, std::int64_t now) {
        for (const char c : in) {
            if (c != '\n') {
                line_ += c;
                continue;
            }
            if (line_.empty()) {
                if (have_data_ && data_seq_ >= tally_.min_seq) {
                    ++events;
                    ++tally_.events;
                    const auto us = (now - data_ns_) / 1000;
                    tally_.latency_us.push_back(static_cast<std::uint32_t>(std::max<std::int64_t>(us, 0)));
                }
                have_data_ = false;
            } else if (line_.rfind("data: ", 0) == 0) {
                const char* p = line_.data() + 6;
                const char* end = line_.data() + line_.size();
                auto r = std::from_chars(p, end, data_ns_);
                if (r.ec == std::errc{} && r.ptr != end && *r.ptr == ' ')
                    r = std::from_chars(r.ptr + 1, end, data_seq_);
                else
                    r.ec = std::errc::invalid_argument;
                if (r.ec != std::errc{})
                    fail("stream " + std::to_string(id_) + ": unexpected data line \"" + line_ + "\"");
                have_data_ = true;
            } else if (line_[0] != ':' && line_.rfind("event:", 0) != 0) {
                fail("stream " + std::to_string(id_) + ": unexpected line \"" + line_ + "\"");
            }
            line_.clear();
        }
    }

    tcp::socket socket_;
    tally& tally_;
    int id_;
    std::string head_;
    std::string size_line_;
    std::string line_;
    std::size_t chunk_left_ = 0;
    int skip_crlf_ = 0;
    bool have_data_ = false;
    std::int64_t data_ns_ = 0;
    long long data_seq_ = 0;
    char buf_[2048];
};

class fanout {
public:
    fanout(net::io_context& ioc, const tcp::endpoint& ep, std::string request, int n, int concurrency)
        : ioc_(ioc), ep_(ep), request_(std::move(request)), n_(n), concurrency_(concurrency), stdin_(ioc, ::dup(0)),
          timer_(ioc) {}

    void start() {
        streams_.reserve(static_cast<std::size_t>(n_));
        for (int i = 0; i < std::min(n_, concurrency_); ++i)
            open_next();
    }

private:
    void open_next() {
        if (static_cast<int>(streams_.size()) == n_)
            return;
        streams_.push_back(std::make_unique<stream>(ioc_, tally_, static_cast<int>(streams_.size())));
        streams_.back()->start(ep_, request_, [this] {
            if (++held_ == n_) {
                std::cout << "held " << held_ << std::endl;
                reset(0);
                read_command();
            } else {
                open_next();
            }
        });
    }

    void reset(long long min_seq) {
        tally_.min_seq = min_seq;
        tally_.latency_us.clear();
        tally_.events = 0;
        for (auto& s : streams_)
            s->events = 0;
        cpu_start_ = bench::cpu_seconds();
    }

    void read_command() {
        net::async_read_until(stdin_, net::dynamic_buffer(input_), '\n', [this](error_code ec, std::size_t n) {
            if (ec)
                fail("stdin: " + ec.message());
            std::istringstream line(input_.substr(0, n));
            input_.erase(0, n);
            std::string cmd;
            line >> cmd;
            if (cmd == "reset") {
                long long min_seq = 0;
                line >> min_seq;
                reset(min_seq);
                std::cout << "ok" << std::endl;
            } else if (cmd == "wait") {
                line >> wait_events_ >> wait_ms_;
                wait_started_ = now_ns();
                poll_wait();
                return;  // poll_wait reads the next command
            } else if (cmd == "report") {
                report();
            } else if (cmd == "quit") {
                std::exit(0);
            } else {
                fail("unknown command \"" + cmd + "\"");
            }
            read_command();
        });
    }

    // Checks every millisecond: a delivery's latency is stamped on arrival,
    // so how promptly this answers does not change the figures.
    void poll_wait() {
        if (tally_.events >= wait_events_ || now_ns() - wait_started_ >= wait_ms_ * 1'000'000) {
            std::cout << (tally_.events >= wait_events_ ? "ok" : "timeout") << std::endl;
            read_command();
            return;
        }
        timer_.expires_after(std::chrono::milliseconds(1));
        timer_.async_wait([this](error_code) { poll_wait(); });
    }

    void report() {
        auto& l = tally_.latency_us;
        auto pct = [&l](double p) -> std::uint32_t {
            if (l.empty())
                return 0;
            const auto k = std::min(l.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(l.size() - 1) + 0.5));
            std::nth_element(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(k), l.end());
            return l[k];
        };
        long long lo = tally_.events, hi = 0;
        for (auto& s : streams_) {
            lo = std::min(lo, s->events);
            hi = std::max(hi, s->events);
        }
        const auto p50 = pct(50), p99 = pct(99), mx = pct(100);
        std::cout << "events=" << tally_.events << " min=" << lo << " max=" << hi << " p50_us=" << p50
                  << " p99_us=" << p99 << " max_us=" << mx << " closed=" << tally_.closed
                  << " cpu=" << bench::cpu_seconds() - cpu_start_ << std::endl;
    }

    net::io_context& ioc_;
    tcp::endpoint ep_;
    std::string request_;
    int n_, concurrency_;
    net::posix::stream_descriptor stdin_;
    net::steady_timer timer_;
    std::string input_;
    std::vector<std::unique_ptr<stream>> streams_;
    tally tally_;
    int held_ = 0;
    long long wait_events_ = 0;
    std::int64_t wait_ms_ = 0, wait_started_ = 0;
    double cpu_start_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: sse_fanout_client HOST PORT PATH CONNECTIONS CONNECT_CONCURRENCY\n";
        return 2;
    }
    const int n = std::atoi(argv[4]);
    const int concurrency = std::atoi(argv[5]);
    if (n < 1 || concurrency < 1)
        fail("CONNECTIONS and CONNECT_CONCURRENCY must be >= 1");
    net::io_context ioc(1);
    const tcp::endpoint ep(net::ip::make_address(argv[1]), static_cast<unsigned short>(std::atoi(argv[2])));
    std::string request = std::string("GET ") + argv[3] + " HTTP/1.1\r\nHost: " + argv[1] + ":" + argv[2] +
                          "\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
    fanout f(ioc, ep, std::move(request), n, concurrency);
    f.start();
    ioc.run();
    return 0;
}
