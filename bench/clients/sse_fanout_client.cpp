// The client of bench/sse_fanout: holds N Server-Sent Events streams and
// measures the delivery latency of every event: each event's data is
// "<publish time> <seq>", the publish time in CLOCK_MONOTONIC nanoseconds,
// stamped by the server's view as it publishes (same clock here, same machine).
//
//   sse_fanout_client HOST PORT PATH CONNECTIONS CONNECT_CONCURRENCY [THREADS]
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
//                     closed=C cpu=S wakes=W": events since the reset, the
//                     fewest and most on one stream, latency percentiles,
//                     streams the server closed, this process's CPU seconds
//                     (all its threads) since the reset, and how many times
//                     its threads woke from epoll_wait (events per wake-up
//                     drive the CPU per event: a wake-up costs more than a read)
//   quit              exits 0
//
// Comment lines (the heartbeat) and "event:" lines are skipped; a data line
// that is not "data: <integer> <integer>" (optionally followed by a space and
// padding), a chunk framing error or any other line fails the run.
//
// The client is part of what the bench measures (an event's latency ends when
// the client reads it) and shares the machine's cores with the server, so it
// is built to cost as little per event as the kernel allows: raw epoll, edge
// triggered, up to 1024 ready streams per epoll_wait, one recv per ready stream
// into one buffer per thread, and a byte-at-a-time decoder per stream that
// keeps a few dozen bytes of state and no line buffer. THREADS (default 1)
// splits the streams over that many threads, each with its own epoll.
#include "client_support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) { bench::fail("sse_fanout_client", what); }

std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Where every stream connects, and what it asks.
struct target {
    sockaddr_storage addr{};
    socklen_t addr_len = 0;
    std::string request;
};

// What one thread's streams count. Only its own thread touches it, except
// while that thread runs a command for the main thread (worker::call).
struct tally {
    // One per event since the reset. A deque grows by blocks: a vector that
    // doubles would copy megabytes in the middle of a run, and the events
    // read meanwhile would count that stall as delivery latency.
    std::deque<std::uint32_t> latency_us;
    long long events = 0;
    long long wakes = 0;    // epoll_wait calls that returned something
    long long min_seq = 0;  // events numbered below are not counted
    int closed = 0;
};

// One held stream: the response head, then a chunked body decoded into SSE
// lines. The decoder takes the bytes as they come, one at a time, and keeps
// only where it is and the data line's two numbers so far, so a read may end
// anywhere (inside a chunk size or a number) and nothing is buffered.
class stream {
public:
    enum class phase : std::uint8_t { connecting, head, body, ended, closed };

    stream(int fd, int id) : fd_(fd), id_(id) {}

    int fd() const { return fd_; }
    phase state() const { return phase_; }
    long long events = 0;  // since the reset

    // The socket connected: send the request (small enough for one send on a
    // fresh socket; anything less is an error here, not a case to resume).
    void send_request(const std::string& request) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0)
            fail(where() + "connect: " + std::strerror(err));
        const auto n = ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL);
        if (n != static_cast<ssize_t>(request.size()))
            fail(where() + "sending the request: " + (n < 0 ? std::strerror(errno) : "partial send"));
        phase_ = phase::head;
    }

    // Bytes read at `now`; returns true once the response head is complete
    // (the stream is held).
    bool feed(const char* p, std::size_t n, std::int64_t now, tally& t) {
        bool held = false;
        if (phase_ == phase::head) {
            const auto scan_from = head_.size() < 3 ? 0 : head_.size() - 3;
            head_.append(p, n);
            const auto end = head_.find("\r\n\r\n", scan_from);
            if (end == std::string::npos) {
                if (head_.size() > 16384)
                    fail(where() + "response head over 16 KiB");
                return false;
            }
            check_head(std::string_view(head_).substr(0, end + 4));
            const auto rest = head_.size() - (end + 4);
            p += n - rest;
            n = rest;
            std::string().swap(head_);
            phase_ = phase::body;
            held = true;
        }
        if (phase_ == phase::body)
            body(p, p + n, now, t);
        return held;
    }

    // The server closed the stream (or reset it): counted once the stream was
    // held, a failure before.
    void on_close(tally& t, int err) {
        if (phase_ == phase::connecting || phase_ == phase::head)
            fail(where() + "closed before the response head" + (err ? std::string(": ") + std::strerror(err) : ""));
        ::close(fd_);
        phase_ = phase::closed;
        ++t.closed;
    }

private:
    // Where a chunk is: its size line, its data, the CRLF after it.
    enum class chunk : std::uint8_t { size, size_lf, data, data_cr, data_lf };
    // Where an SSE line is, for the parts the client reads.
    enum class line : std::uint8_t { start, data_name, event_name, ns, seq, skip };

    std::string where() const { return "stream " + std::to_string(id_) + ": "; }

    void check_head(std::string_view head) {
        std::string lower(head);
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (lower.rfind("http/1.1 200", 0) != 0 || lower.find("content-type: text/event-stream") == std::string::npos ||
            lower.find("transfer-encoding: chunked") == std::string::npos)
            fail(where() + "expected 200, text/event-stream, chunked; got:\n" + std::string(head));
    }

    // Fails the run naming what was expected and showing the bytes read
    // around the offending one.
    [[noreturn]] void bad(const char* expected, const char* at, const char* begin, const char* end) const {
        const char* from = std::max(begin, at - 40);
        const char* to = std::min(end, at + 20);
        std::string shown;
        for (const char* q = from; q < to; ++q) {
            if (q == at)
                shown += "[here]";
            if (*q == '\r')
                shown += "\\r";
            else if (*q == '\n')
                shown += "\\n";
            else if (static_cast<unsigned char>(*q) < 0x20 || static_cast<unsigned char>(*q) >= 0x7f)
                shown += "\\x" + std::string(1, "0123456789abcdef"[static_cast<unsigned char>(*q) >> 4]) +
                         "0123456789abcdef"[*q & 0xf];
            else
                shown += *q;
        }
        fail(where() + "expected " + expected + ", got \"" + shown + "\"");
    }

    static int hex(char c) {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    }

    // Chunked framing, strictly: hex digits, CRLF, that many bytes, CRLF; a
    // size of 0 ends the body (the server ends the stream; what follows, the
    // trailer, is not read: the close is counted when the socket ends).
    void body(const char* p, const char* end, std::int64_t now, tally& t) {
        const char* const begin = p;
        while (p < end && phase_ == phase::body) {
            switch (chunk_) {
            case chunk::size:
                if (const int d = hex(*p); d >= 0 && size_digits_ < 8) {
                    chunk_left_ = chunk_left_ * 16 + static_cast<std::uint32_t>(d);
                    ++size_digits_;
                } else if (*p == '\r' && size_digits_ > 0) {
                    chunk_ = chunk::size_lf;
                } else {
                    bad("a chunk size (hex digits, then CRLF)", p, begin, end);
                }
                ++p;
                break;
            case chunk::size_lf:
                if (*p != '\n')
                    bad("LF after a chunk size", p, begin, end);
                ++p;
                size_digits_ = 0;
                if (chunk_left_ == 0)
                    phase_ = phase::ended;
                else
                    chunk_ = chunk::data;
                break;
            case chunk::data: {
                const auto take = std::min<std::size_t>(chunk_left_, static_cast<std::size_t>(end - p));
                sse(p, p + take, now, t, begin, end);
                p += take;
                chunk_left_ -= static_cast<std::uint32_t>(take);
                if (chunk_left_ == 0)
                    chunk_ = chunk::data_cr;
                break;
            }
            case chunk::data_cr:
                if (*p++ != '\r')
                    bad("CRLF after a chunk's data", p - 1, begin, end);
                chunk_ = chunk::data_lf;
                break;
            case chunk::data_lf:
                if (*p++ != '\n')
                    bad("CRLF after a chunk's data", p - 1, begin, end);
                chunk_ = chunk::size;
                break;
            }
        }
    }

    // SSE lines within a chunk's data: "data: <ns> <seq>[ padding]", comment
    // lines (":..."), "event:" lines; a blank line ends the event.
    void sse(const char* p, const char* end, std::int64_t now, tally& t, const char* begin, const char* read_end) {
        static constexpr std::string_view data_name = "data: ";
        static constexpr std::string_view event_name = "event:";
        for (; p < end; ++p) {
            const char c = *p;
            switch (line_) {
            case line::start:
                if (c == '\n')
                    end_event(now, t);
                else if (c == ':')
                    line_ = line::skip;
                else if (c == 'd')
                    line_ = line::data_name;
                else if (c == 'e')
                    line_ = line::event_name;
                else
                    bad("an SSE line (data:, event: or a comment)", p, begin, read_end);
                name_matched_ = 1;
                break;
            case line::data_name:
                if (c != data_name[name_matched_])
                    bad("\"data: \"", p, begin, read_end);
                if (++name_matched_ == data_name.size()) {
                    line_ = line::ns;
                    data_ns_ = 0;
                    data_seq_ = 0;
                    number_digits_ = 0;
                }
                break;
            case line::event_name:
                if (c != event_name[name_matched_])
                    bad("\"event:\"", p, begin, read_end);
                if (++name_matched_ == event_name.size())
                    line_ = line::skip;
                break;
            case line::ns:
                if (c >= '0' && c <= '9' && number_digits_ < 19) {
                    data_ns_ = data_ns_ * 10 + (c - '0');
                    ++number_digits_;
                } else if (c == ' ' && number_digits_ > 0) {
                    line_ = line::seq;
                    number_digits_ = 0;
                } else {
                    bad("data \"<publish ns> <seq>\"", p, begin, read_end);
                }
                break;
            case line::seq:
                if (c >= '0' && c <= '9' && number_digits_ < 18) {
                    data_seq_ = data_seq_ * 10 + (c - '0');
                    ++number_digits_;
                } else if ((c == '\n' || c == ' ') && number_digits_ > 0) {
                    have_data_ = true;
                    number_digits_ = 0;
                    line_ = c == '\n' ? line::start : line::skip;  // a space: padding up to the end of the line
                } else {
                    bad("data \"<publish ns> <seq>\"", p, begin, read_end);
                }
                break;
            case line::skip:
                if (const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p))) {
                    p = static_cast<const char*>(nl);
                    line_ = line::start;
                } else {
                    p = end - 1;
                }
                break;
            }
        }
    }

    void end_event(std::int64_t now, tally& t) {
        if (have_data_ && data_seq_ >= t.min_seq) {
            ++events;
            ++t.events;
            const auto us = (now - data_ns_) / 1000;
            t.latency_us.push_back(static_cast<std::uint32_t>(std::max<std::int64_t>(us, 0)));
        }
        have_data_ = false;
    }

    int fd_;
    int id_;
    std::string head_;  // until the head is complete; freed then
    std::int64_t data_ns_ = 0;
    long long data_seq_ = 0;
    std::uint32_t chunk_left_ = 0;
    std::uint8_t size_digits_ = 0;    // of the chunk size line
    std::uint8_t number_digits_ = 0;  // of the data line's number being read (a chunk may end inside it)
    std::uint8_t name_matched_ = 0;
    phase phase_ = phase::connecting;
    chunk chunk_ = chunk::size;
    line line_ = line::start;
    bool have_data_ = false;
};

// Events counted since the reset, per thread, where the main thread can wait
// for a number of them: a thread that brings the sum to what the main thread
// waits for wakes it, so "wait" costs no polling (a wake-up every millisecond
// would be a fifth of the client's context switches).
class progress {
public:
    explicit progress(int threads) : seen_(static_cast<std::size_t>(threads)) {}

    // Thread i has counted `events` since the reset.
    void update(int i, long long events) {
        seen_[static_cast<std::size_t>(i)].store(events);
        if (total() >= target_.load()) {
            std::lock_guard lock(mutex_);
            reached_.notify_all();
        }
    }

    // Whether `events` were counted before `deadline`. Sequentially
    // consistent stores and loads on both sides: either the thread that
    // counts sees the target, or this sees its count.
    bool wait(long long events, std::chrono::steady_clock::time_point deadline) {
        target_.store(events);
        std::unique_lock lock(mutex_);
        const bool ok = reached_.wait_until(lock, deadline, [&] { return total() >= events; });
        target_.store(no_target);
        return ok;
    }

private:
    static constexpr long long no_target = std::numeric_limits<long long>::max();

    long long total() const {
        long long sum = 0;
        for (const auto& s : seen_)
            sum += s.load();
        return sum;
    }

    std::vector<std::atomic<long long>> seen_;
    std::atomic<long long> target_{no_target};
    std::mutex mutex_;
    std::condition_variable reached_;
};

// One client thread: its own epoll and share of the streams. The main thread
// talks to it only through call(), which runs a function on this thread
// between two epoll batches, so the tally needs no lock.
class worker {
public:
    worker(const target& tgt, progress& prog, int index, int first_id, int count, int concurrency)
        : target_(tgt), progress_(prog), index_(index), first_id_(first_id), count_(count), concurrency_(concurrency),
          epoll_(epoll_create1(EPOLL_CLOEXEC)), wake_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
        if (epoll_ < 0 || wake_ < 0)
            fail(std::string("epoll/eventfd: ") + std::strerror(errno));
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = nullptr;  // the wake-up, not a stream
        epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
        // Reserved once, so the streams never move (epoll holds pointers to
        // them) and sit side by side in memory.
        streams_.reserve(static_cast<std::size_t>(count_));
    }

    void start() {
        std::thread([this] { run(); }).detach();  // ends with the process (quit)
    }

    // Blocks until every stream of this thread has its response head.
    void wait_held() {
        std::unique_lock lock(mutex_);
        done_cv_.wait(lock, [this] { return held_ == count_; });
    }

    // Runs fn on this worker's thread and waits for it.
    void call(std::function<void(worker&)> fn) {
        std::unique_lock lock(mutex_);
        pending_ = std::move(fn);
        const std::uint64_t one = 1;
        if (::write(wake_, &one, sizeof one) != sizeof one)
            fail(std::string("eventfd write: ") + std::strerror(errno));
        done_cv_.wait(lock, [this] { return !pending_; });
    }

    tally& counts() { return tally_; }
    const std::vector<stream>& streams() const { return streams_; }

    void reset(long long min_seq) {
        tally_.min_seq = min_seq;
        tally_.latency_us.clear();
        tally_.events = 0;
        tally_.wakes = 0;
        progress_.update(index_, 0);
        for (auto& s : streams_)
            s.events = 0;
    }

private:
    void run() {
        for (int i = 0; i < std::min(count_, concurrency_); ++i)
            open_next();
        std::vector<epoll_event> ready(1024);
        for (;;) {
            const int n = epoll_wait(epoll_, ready.data(), static_cast<int>(ready.size()), -1);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                fail(std::string("epoll_wait: ") + std::strerror(errno));
            }
            ++tally_.wakes;
            for (int i = 0; i < n; ++i) {
                if (ready[i].data.ptr == nullptr)
                    run_call();
                else
                    on_ready(*static_cast<stream*>(ready[i].data.ptr), ready[i].events);
            }
            progress_.update(index_, tally_.events);
        }
    }

    void open_next() {
        if (static_cast<int>(streams_.size()) == count_)
            return;
        const int id = first_id_ + static_cast<int>(streams_.size());
        const int fd = ::socket(target_.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            fail("stream " + std::to_string(id) + ": socket: " + std::strerror(errno));
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&target_.addr), target_.addr_len) != 0 &&
            errno != EINPROGRESS)
            fail("stream " + std::to_string(id) + ": connect: " + std::strerror(errno));
        streams_.emplace_back(fd, id);
        epoll_event ev{};
        ev.events = EPOLLOUT;
        ev.data.ptr = &streams_.back();
        if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0)
            fail("stream " + std::to_string(id) + ": epoll_ctl: " + std::strerror(errno));
    }

    // Edge triggered: a stream is reported once per arrival, where level
    // triggering would have epoll poll it again at the next epoll_wait only
    // to drop it (a tenth of the client's time in a profile). A read shorter
    // than the buffer emptied the socket, so a stream needs no second recv to
    // see EAGAIN: anything that arrives after this read reports it again.
    // Not so the end of the stream: a FIN that came with the last bytes
    // leaves nothing to report later, so on a hang-up (EPOLLRDHUP) it reads
    // on until recv says so.
    void on_ready(stream& s, std::uint32_t events) {
        if (s.state() == stream::phase::connecting) {
            s.send_request(target_.request);
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
            ev.data.ptr = &s;
            epoll_ctl(epoll_, EPOLL_CTL_MOD, s.fd(), &ev);
            return;
        }
        for (;;) {
            const auto n = ::recv(s.fd(), buf_, sizeof buf_, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                if (n == 0 || errno != EAGAIN)
                    s.on_close(tally_, n == 0 ? 0 : errno);
                return;
            }
            // Stamped per read, not once per epoll batch: going through a
            // batch of 1,024 ready streams takes milliseconds, and a batch
            // stamp would date the last of them that much too early.
            if (s.feed(buf_, static_cast<std::size_t>(n), now_ns(), tally_))
                on_held();
            if (static_cast<std::size_t>(n) < sizeof buf_ && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                return;
        }
    }

    void on_held() {
        {
            std::lock_guard lock(mutex_);
            ++held_;
        }
        done_cv_.notify_all();
        open_next();
    }

    void run_call() {
        std::uint64_t count = 0;
        if (::read(wake_, &count, sizeof count) < 0 && errno != EAGAIN)
            fail(std::string("eventfd read: ") + std::strerror(errno));
        std::lock_guard lock(mutex_);
        if (!pending_)
            return;
        pending_(*this);
        pending_ = nullptr;
        done_cv_.notify_all();
    }

    const target& target_;
    progress& progress_;
    int index_, first_id_, count_, concurrency_;
    int epoll_, wake_;
    std::vector<stream> streams_;
    tally tally_;
    char buf_[65536];  // every read of this thread lands here; events are decoded in place

    std::mutex mutex_;  // guards held_ and pending_
    std::condition_variable done_cv_;
    int held_ = 0;
    std::function<void(worker&)> pending_;
};

target resolve(const std::string& host, int port, const std::string& path) {
    target t;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&t.addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&t.addr);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<std::uint16_t>(port));
        t.addr_len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<std::uint16_t>(port));
        t.addr_len = sizeof *v6;
    } else {
        fail("HOST must be an IPv4 or IPv6 address, got \"" + host + "\"");
    }
    t.request = "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                "\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
    return t;
}

// The command loop on stdin, over every worker.
class client {
public:
    client(std::vector<std::unique_ptr<worker>>& workers, progress& prog) : workers_(workers), progress_(prog) {}

    void run() {
        for (std::string text; std::getline(std::cin, text);) {
            std::istringstream line(text);
            std::string cmd;
            line >> cmd;
            if (cmd == "reset") {
                long long min_seq = 0;
                line >> min_seq;
                reset(min_seq);
                std::cout << "ok" << std::endl;
            } else if (cmd == "wait") {
                long long events = 0;
                std::int64_t ms = 0;
                line >> events >> ms;
                const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
                std::cout << (progress_.wait(events, deadline) ? "ok" : "timeout") << std::endl;
            } else if (cmd == "report") {
                report();
            } else if (cmd == "quit") {
                std::cout.flush();
                std::_Exit(0);  // the workers block in epoll_wait: nothing to join
            } else {
                fail("unknown command \"" + cmd + "\"");
            }
        }
        fail("stdin ended without quit");
    }

    void reset(long long min_seq) {
        for (auto& w : workers_)
            w->call([min_seq](worker& self) { self.reset(min_seq); });
        cpu_start_ = bench::cpu_seconds();
    }

private:
    void report() {
        std::vector<std::uint32_t> l;
        long long events = 0, wakes = 0, lo = -1, hi = 0;
        int closed = 0;
        for (auto& w : workers_)
            w->call([&](worker& self) {
                const auto& t = self.counts();
                l.insert(l.end(), t.latency_us.begin(), t.latency_us.end());
                events += t.events;
                wakes += t.wakes;
                closed += t.closed;
                for (const auto& s : self.streams()) {
                    lo = lo < 0 ? s.events : std::min(lo, s.events);
                    hi = std::max(hi, s.events);
                }
            });
        auto pct = [&l](double p) -> std::uint32_t {
            if (l.empty())
                return 0;
            const auto k =
                std::min(l.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(l.size() - 1) + 0.5));
            std::nth_element(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(k), l.end());
            return l[k];
        };
        const auto p50 = pct(50), p99 = pct(99), mx = pct(100);
        std::cout << "events=" << events << " min=" << std::max(lo, 0LL) << " max=" << hi << " p50_us=" << p50
                  << " p99_us=" << p99 << " max_us=" << mx << " closed=" << closed
                  << " cpu=" << bench::cpu_seconds() - cpu_start_ << " wakes=" << wakes << std::endl;
    }

    std::vector<std::unique_ptr<worker>>& workers_;
    progress& progress_;
    double cpu_start_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6 && argc != 7) {
        std::cerr << "usage: sse_fanout_client HOST PORT PATH CONNECTIONS CONNECT_CONCURRENCY [THREADS]\n";
        return 2;
    }
    const int n = std::atoi(argv[4]);
    const int concurrency = std::atoi(argv[5]);
    const int threads = argc == 7 ? std::atoi(argv[6]) : 1;
    if (n < 1 || concurrency < 1 || threads < 1)
        fail("CONNECTIONS, CONNECT_CONCURRENCY and THREADS must be >= 1");
    const target tgt = resolve(argv[1], std::atoi(argv[2]), argv[3]);

    const int used = std::min(threads, n);
    progress prog(used);
    std::vector<std::unique_ptr<worker>> workers;
    for (int i = 0, first = 0; i < used; ++i) {
        const int count = n / used + (i < n % used ? 1 : 0);
        workers.push_back(std::make_unique<worker>(tgt, prog, i, first, count, std::max(1, concurrency / used)));
        first += count;
    }
    for (auto& w : workers)
        w->start();
    for (auto& w : workers)
        w->wait_held();
    client c(workers, prog);
    std::cout << "held " << n << std::endl;
    c.reset(0);
    c.run();
    return 0;
}
