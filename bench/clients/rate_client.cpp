// The constant-rate load generator of bench/rate_latency: requests sent on
// a fixed schedule whatever the server does, each one's latency measured
// from the time it was *meant* to be sent. A closed loop (wrk) waits for a
// response before sending the next request, so a server that stalls also
// stalls the load and the stall is hidden (coordinated omission); here a
// stall shows as the latency of every request scheduled during it.
//
//   rate_client HOST PORT PATH RATE CONNECTIONS DURATION_S WARMUP_S [HEADER]...
//
// Connection i of C sends its k-th request at start + (k*C + i) / RATE: the
// connections share the rate and interleave evenly. A connection whose
// response is late sends its next request as soon as the response is in,
// with the latency still counted from the scheduled time (wrk2's rule). A
// response that asks to close (or a closed connection) is followed by a new
// connection. Requests scheduled in the first WARMUP_S seconds are sent but
// not counted. Each HEADER is "Name: value".
//
// Prints one JSON line: scheduled (every request the schedule put in the
// counted window), completed, errors, unanswered (scheduled and neither:
// still waiting at the end, or never sent because the server was too slow
// for the connection to reach it), the achieved rate, latency percentiles in
// ms of the completed requests (p50, p90, p99, p99.9, max), answered (every
// response read, the warm-up's included: what the server's CPU over the
// whole run is divided by) and this process's CPU seconds (so a run can show
// the client was not the ceiling).
// Exits 1 on a bad argument or a failed first connect.
#include "client_support.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

[[noreturn]] void fail(const std::string& what) { bench::fail("rate_client", what); }

struct options {
    std::string host, port, path;
    double rate = 0;
    int connections = 0;
    double duration_s = 0, warmup_s = 0;
    std::vector<std::pair<std::string, std::string>> headers;
};

struct totals {
    long scheduled = 0, completed = 0, errors = 0;  // counted requests sent, answered (< 400), failed
    long answered = 0;                 // every response read, warm-up or not
    std::vector<double> latencies_us;  // of the counted requests
    int live = 0;                      // connections still on their schedule
    net::steady_timer* end = nullptr;  // cancelled when the last one is done
};

class connection : public std::enable_shared_from_this<connection> {
public:
    connection(net::io_context& ioc, const options& opt, const tcp::resolver::results_type& addrs, int index,
               const clock_type::time_point& start, totals& out)
        : ioc_(ioc), opt_(opt), addrs_(addrs), index_(index), start_(start), stream_(ioc), timer_(ioc), out_(out) {
        request_ = {http::verb::get, opt.path, 11};
        request_.set(http::field::host, opt.host + ":" + opt.port);
        for (const auto& [name, value] : opt.headers) request_.set(name, value);
        request_.prepare_payload();
        ++out_.live;
    }

    // The last handler of a connection done with its schedule lets go of it.
    ~connection() {
        if (--out_.live == 0 && out_.end) out_.end->cancel();
    }

    // Connects before the schedule starts, so that the set-up of many
    // connections at once (a SYN dropped at a full backlog waits a second)
    // is not counted as the server's latency.
    template <class Handler>
    void connect(Handler&& connected) {
        stream_.async_connect(addrs_, [self = shared_from_this(), connected](beast::error_code ec, const tcp::endpoint&) {
            if (ec) fail("cannot connect: " + ec.message());
            self->open_ = true;
            self->stream_.socket().set_option(tcp::no_delay(true));
            connected();
        });
    }

    void begin() { wait_for_next(); }

private:
    clock_type::time_point scheduled(long k) const {
        const double at_s = (static_cast<double>(k) * opt_.connections + index_) / opt_.rate;
        return start_ + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(at_s));
    }

    void wait_for_next() {
        intended_ = scheduled(k_);
        if (intended_ >= start_ + std::chrono::duration<double>(opt_.duration_s)) return;  // done
        timer_.expires_at(intended_);
        timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
            if (!ec) self->send();
        });
    }

    bool counted() const { return intended_ >= start_ + std::chrono::duration<double>(opt_.warmup_s); }

    void send() {
        if (!sent_) {
            sent_ = true;
            if (counted()) ++out_.scheduled;
        }
        if (!open_) {
            stream_.async_connect(addrs_, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                if (ec) return self->failed();
                self->open_ = true;
                self->stream_.socket().set_option(tcp::no_delay(true));
                self->send();
            });
            return;
        }
        http::async_write(stream_, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->failed();
            self->read();
        });
    }

    void read() {
        parser_.emplace();
        parser_->body_limit(64 * 1024 * 1024);
        http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->failed();
            const auto& res = self->parser_->get();
            ++self->out_.answered;
            self->done(res.result_int() < 400);
            if (!res.keep_alive()) self->reset();
            self->next();
        });
    }

    void done(bool ok) {
        if (!counted()) return;
        if (!ok) {
            ++out_.errors;
            return;
        }
        ++out_.completed;
        out_.latencies_us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - intended_).count());
    }

    void failed() {
        done(false);
        reset();
        next();
    }

    void reset() {
        beast::error_code ignored;
        stream_.socket().close(ignored);
        buffer_.clear();
        open_ = false;
    }

    void next() {
        ++k_;
        sent_ = false;
        wait_for_next();
    }

    net::io_context& ioc_;
    const options& opt_;
    const tcp::resolver::results_type& addrs_;
    int index_;
    const clock_type::time_point& start_;  // set once every connection is up
    clock_type::time_point intended_;
    beast::tcp_stream stream_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    http::request<http::empty_body> request_;
    std::optional<http::response_parser<http::string_body>> parser_;
    totals& out_;
    long k_ = 0;
    bool open_ = false;
    bool sent_ = false;  // the k-th request was sent (a reconnect sends it again, counted once)
};

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(i, sorted.size() - 1)];
}

options parse(int argc, char** argv) {
    if (argc < 8) fail("usage: rate_client HOST PORT PATH RATE CONNECTIONS DURATION_S WARMUP_S [HEADER]...");
    options o;
    o.host = argv[1];
    o.port = argv[2];
    o.path = argv[3];
    o.rate = std::atof(argv[4]);
    o.connections = std::atoi(argv[5]);
    o.duration_s = std::atof(argv[6]);
    o.warmup_s = std::atof(argv[7]);
    if (o.rate <= 0 || o.connections <= 0 || o.duration_s <= o.warmup_s || o.warmup_s < 0)
        fail("expected RATE > 0, CONNECTIONS > 0 and DURATION_S > WARMUP_S >= 0");
    for (int i = 8; i < argc; ++i) {
        const std::string h = argv[i];
        const auto colon = h.find(':');
        if (colon == std::string::npos) fail("a header is 'Name: value', found '" + h + "'");
        o.headers.emplace_back(h.substr(0, colon), h.substr(h.find_first_not_of(' ', colon + 1)));
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const options opt = parse(argc, argv);
    net::io_context ioc(1);
    tcp::resolver resolver(ioc);
    const auto addrs = resolver.resolve(opt.host, opt.port);
    totals out;
    out.latencies_us.reserve(static_cast<std::size_t>(opt.rate * opt.duration_s * 1.1));
    clock_type::time_point start = clock_type::now() + std::chrono::hours(1);  // set once all are connected
    const double cpu_before = bench::cpu_seconds();
    // A request still unanswered this long after the schedule ended (as
    // long as the run, at least 2 s) is lost: counted in "unanswered", never
    // in the percentiles.
    const double grace_s = std::max(2.0, opt.duration_s);
    net::steady_timer end(ioc);
    out.end = &end;
    std::vector<std::shared_ptr<connection>> all;
    int connected = 0;
    for (int i = 0; i < opt.connections; ++i) all.push_back(std::make_shared<connection>(ioc, opt, addrs, i, start, out));
    for (auto& c : all)
        c->connect([&] {
            if (++connected < opt.connections) return;
            start = clock_type::now() + std::chrono::milliseconds(10);
            end.expires_at(start + std::chrono::duration_cast<clock_type::duration>(
                                       std::chrono::duration<double>(opt.duration_s + grace_s)));
            end.async_wait([&](beast::error_code ec) {
                if (!ec) ioc.stop();
            });
            for (auto& each : all) each->begin();
            all.clear();
        });
    ioc.run();
    const double cpu = bench::cpu_seconds() - cpu_before;
    const double measured_s = opt.duration_s - opt.warmup_s;
    // Requests the schedule put in the counted window, sent or not: a server
    // too slow to let its connections get through the warm-up's requests
    // leaves some unsent, and they count as unanswered, not as nothing.
    out.scheduled = std::max(out.scheduled, static_cast<long>(opt.rate * measured_s));
    auto& l = out.latencies_us;
    std::sort(l.begin(), l.end());
    std::printf("{\"scheduled\": %ld, \"completed\": %ld, \"errors\": %ld, \"unanswered\": %ld, \"rate\": %.1f, "
                "\"p50_ms\": %.3f, "
                "\"p90_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f, \"max_ms\": %.3f, \"answered\": %ld, "
                "\"client_cpu_s\": %.3f}\n",
                out.scheduled, out.completed, out.errors, out.scheduled - out.completed - out.errors,
                static_cast<double>(out.completed) / measured_s,
                percentile(l, 50) / 1e3, percentile(l, 90) / 1e3, percentile(l, 99) / 1e3, percentile(l, 99.9) / 1e3,
                (l.empty() ? 0 : l.back()) / 1e3, out.answered, cpu);
    // Connections still waiting (past the end) hold references to `out`:
    // leave without unwinding them.
    std::fflush(stdout);
    std::_Exit(0);
}
