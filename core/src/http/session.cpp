#include "http/session.hpp"

#include <algorithm>
#include <cstring>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include <m0/log.hpp>

#include "http/exchange_impl.hpp"
#include "http/server.hpp"

namespace m0::http::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
constexpr std::size_t initial_read_buffer = 4096;
// Free space below which unparsed bytes are moved to the buffer's start.
constexpr std::size_t min_read_space = 1024;
// Pipelined requests are not dispatched while this much output waits.
constexpr std::uint64_t output_high_water = 256 * 1024;
// A closing connection discards at most this much input before it gives up.
constexpr std::size_t max_linger_discard = 1024 * 1024;
constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
}  // namespace

session::session(std::shared_ptr<server> owner, asio::ip::tcp::socket socket)
    : server_(std::move(owner)),
      limits_(server_->limits()),
      socket_(std::move(socket)),
      timer_(server_->io()),
      parser_(limits_) {}

session::~session() {
    if (!closed_) server_->session_closed(*this, false);
}

asio::io_context& session::io() noexcept { return server_->io(); }

void session::start() {
    server_->session_opened(*this);
    error_code ec;
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    socket_.non_blocking(true, ec);
    remote_ = socket_.remote_endpoint(ec);
    local_ = socket_.local_endpoint(ec);
    rcap_ = initial_read_buffer;
    rbuf_.reset(new char[rcap_]);
    const auto now = clock::now();
    update_read_phase(now);
    arm_timer(now);
    process();
}

// ---------------------------------------------------------------- requests

std::unique_ptr<request_data> session::take_request_data() {
    if (spare_) return std::move(spare_);
    auto d = std::make_unique<request_data>();
    d->req.headers.reserve(16);
    return d;
}

// Parses buffered bytes and dispatches complete requests, one at a time,
// until the buffer runs dry, a request is in flight, or the connection is
// closing. Then writes what was produced and reads more.
void session::process() {
    if (processing_ || closed_) return;
    processing_ = true;
    bool backlogged = false;
    do {
        backlogged = false;
        while (!closed_ && !active_ && !close_after_flush_) {
            if (out_.pending() >= output_high_water) {
                backlogged = true;
                break;
            }
            if (!parser_.started()) {
                if (!building_) building_ = take_request_data();
                parser_.start(*building_);
            }
            std::size_t used = 0;
            const auto status = parser_.feed(rbuf_.get() + rbegin_, rend_ - rbegin_, used);
            rbegin_ += used;
            // A pending read fills the buffer at rend_: indices stay put.
            if (rbegin_ == rend_ && !read_pending_) rbegin_ = rend_ = 0;
            if (status == parse_status::need_more) {
                // Nothing more will come: answer what was complete, drop a
                // partial request, then close.
                if (peer_eof_) close_after_flush_ = true;
                break;
            }
            if (status == parse_status::error) {
                send_error(parser_.error_status(), parser_.error_reason());
                break;
            }
            if (status == parse_status::head_done) {
                // The client waits for this before sending the body; if the
                // body is already arriving it did not wait.
                if (parser_.expects_continue() && building_->req.version >= 11 && rbegin_ == rend_)
                    out_.append(continue_line);
                continue;
            }
            dispatch();
        }
        // Pipelined responses go out in one write per pass.
        flush();
        if (closed_) {
            processing_ = false;
            return;
        }
    } while (backlogged && out_.pending() < output_high_water);
    processing_ = false;
    update_read_phase(clock::now());
    maybe_read();
}

bool session::ensure_read_space(bool may_grow) {
    if (rend_ < rcap_ && rcap_ - rend_ >= min_read_space) return true;
    if (rbegin_ > 0) {
        std::memmove(rbuf_.get(), rbuf_.get() + rbegin_, rend_ - rbegin_);
        rend_ -= rbegin_;
        rbegin_ = 0;
    }
    if (rend_ < rcap_) return true;
    // Large enough for the largest head the limits allow, plus one byte so
    // the parser can see it is over.
    const std::size_t max_cap =
        std::max<std::size_t>(limits_.max_header_bytes, limits_.max_request_line) + min_read_space;
    if (!may_grow || rcap_ >= max_cap) return false;
    const std::size_t cap = std::min(max_cap, rcap_ * 2);
    std::unique_ptr<char[]> bigger(new char[cap]);
    std::memcpy(bigger.get(), rbuf_.get(), rend_);
    rbuf_ = std::move(bigger);
    rcap_ = cap;
    return true;
}

void session::maybe_read() {
    if (closed_ || read_pending_ || peer_eof_) return;
    if (lingering_) {
        rbegin_ = rend_ = 0;
    } else if (!ensure_read_space(!active_)) {
        // Read-ahead while a request is in flight stops at a full buffer.
        // Otherwise the buffer is full at its largest size: a head line
        // longer than any limit allows.
        if (!active_ && !close_after_flush_) {
            if (parser_.head_done())
                send_error(400, "chunk or trailer line longer than the read buffer");
            else
                send_error(431, "header line longer than the read buffer");
            flush();
        }
        return;
    }
    read_pending_ = true;
    socket_.async_read_some(asio::buffer(rbuf_.get() + rend_, rcap_ - rend_),
                            [self = shared_from_this()](const error_code& ec, std::size_t n) {
                                self->on_read(ec, n);
                            });
}

void session::on_read(const error_code& ec, std::size_t n) {
    read_pending_ = false;
    if (closed_) return;
    if (ec) {
        if (ec == asio::error::operation_aborted) return;
        if (ec != asio::error::eof || lingering_) {
            if (ec != asio::error::eof) gone_ = true;
            close();
            return;
        }
        peer_eof_ = true;
        if (active_) {
            // The handler learns the client left; its response is still
            // written in case the client only half-closed.
            gone_ = true;
            notify_drain();
            return;
        }
        process();  // answer complete requests already buffered, then close
        return;
    }
    if (lingering_) {
        linger_discarded_ += n;
        if (linger_discarded_ > max_linger_discard)
            close();
        else
            maybe_read();
        return;
    }
    rend_ += n;
    if (phase_ == read_phase::body) set_read_deadline(after(limits_.body_timeout, clock::now()));
    if (active_)
        maybe_read();
    else
        process();
}

void session::dispatch() {
    parser_.stop();
    auto data = std::move(building_);
    data->req.remote = remote_;
    data->req.local = local_;
    ++served_;
    const auto max = limits_.max_requests_per_connection;
    keep_alive_ = data->req.keep_alive && (max == 0 || served_ < max);
    version_ = data->req.version;
    is_head_ = data->is_head;
    resp_ = {};
    auto ex = std::make_shared<exchange_impl>(shared_from_this(), std::move(data));
    active_ = ex.get();
    phase_ = read_phase::none;
    read_deadline_ = clock::time_point::max();
    server_->stats().in_flight.fetch_add(1, std::memory_order_relaxed);
    server_->app().on_request(std::move(ex));
}

void session::update_read_phase(clock::time_point now) {
    if (closed_ || lingering_) return;
    if (active_ || close_after_flush_) {
        phase_ = read_phase::none;
        read_deadline_ = clock::time_point::max();
        return;
    }
    if (parser_.head_done()) {
        if (phase_ != read_phase::body) {
            phase_ = read_phase::body;
            set_read_deadline(after(limits_.body_timeout, now));
        }
        return;
    }
    if (rend_ > rbegin_ || parser_.got_some()) {
        // Counted from the first byte of the request, not per read, so a
        // client trickling a head byte by byte cannot hold the connection.
        if (phase_ != read_phase::head) {
            // A new connection's first head is timed from the accept: the
            // idle wait before its first byte already counts, so a client
            // gets header_timeout in all, not twice that.
            const bool first_head = phase_ == read_phase::idle && served_ == 0;
            phase_ = read_phase::head;
            if (!first_head) set_read_deadline(after(limits_.header_timeout, now));
        }
        return;
    }
    if (phase_ != read_phase::idle) {
        phase_ = read_phase::idle;
        set_read_deadline(after(served_ == 0 ? limits_.header_timeout : limits_.keepalive_timeout, now));
    }
}

// ---------------------------------------------------------------- responses

void session::start_response(unsigned status, const std::vector<response_header>* headers,
                             body_framing framing, std::uint64_t length) {
    resp_.begun = true;
    resp_.framing = framing;
    resp_.send_body = !is_head_ && framing != body_framing::none;
    resp_.remaining = length;
    if (server_->draining() || peer_eof_ || framing == body_framing::eof) keep_alive_ = false;
    if (closed_) return;
    head_spec spec;
    spec.status = status;
    spec.headers = headers;
    spec.framing = framing;
    spec.content_length = length;
    if (!keep_alive_)
        spec.connection = connection_token::close;
    else if (version_ < 11)
        spec.connection = connection_token::keep_alive;
    auto& buf = out_.tail();
    const auto before = buf.size();
    append_response_head(buf, spec, server_->date());
    out_.added(buf.size() - before);
}

// An interim (1xx) status from a handler would be sent as the only answer,
// and the client would wait for a final response forever; the engine sends
// its own 100 Continue without coming here.
bool session::accept_status(const exchange_impl& ex, unsigned status) {
    if (status >= 200 && status <= 999) return true;
    log::error("http: handler answered " + std::string(ex.req().method) + " " + std::string(ex.req().target) + " with status " +
               std::to_string(status) + ", which is not a final status; sent 500 instead");
    static const std::vector<response_header> no_headers;
    start_response(500, &no_headers, body_framing::length, 0);
    finish_response();
    return false;
}

void session::respond(exchange_impl& ex, unsigned status, const std::vector<response_header>& headers,
                      std::string&& body) {
    if (active_ != &ex || resp_.begun || !accept_status(ex, status)) return;
    const bool bodiless = !status_has_body(status);
    start_response(status, &headers, bodiless ? body_framing::none : body_framing::length, body.size());
    if (resp_.send_body && !closed_ && !body.empty()) out_.push(std::move(body));
    finish_response();
}

void session::respond_borrowed(exchange_impl& ex, unsigned status, const std::vector<response_header>& headers,
                               std::string_view body) {
    if (active_ != &ex || resp_.begun || !accept_status(ex, status)) return;
    const bool bodiless = !status_has_body(status);
    start_response(status, &headers, bodiless ? body_framing::none : body_framing::length, body.size());
    if (resp_.send_body && !closed_ && !body.empty()) out_.append(body);
    finish_response();
}

void session::begin(exchange_impl& ex, unsigned status, const std::vector<response_header>& headers,
                    std::optional<std::uint64_t> content_length) {
    if (active_ != &ex || resp_.begun || !accept_status(ex, status)) return;
    body_framing framing;
    if (!status_has_body(status))
        framing = body_framing::none;
    else if (content_length)
        framing = body_framing::length;
    else if (is_head_)
        framing = body_framing::none;  // no body follows, so no framing to announce
    else if (version_ >= 11)
        framing = body_framing::chunked;
    else
        framing = body_framing::eof;
    start_response(status, &headers, framing, content_length.value_or(0));
    output_added();
}

void session::write(exchange_impl& ex, std::string&& data) {
    if (active_ != &ex || !resp_.begun) return;
    if (!resp_.send_body || closed_ || data.empty()) return;
    switch (resp_.framing) {
    case body_framing::length:
        if (data.size() > resp_.remaining) {
            abort(ex);  // more than announced: the framing would lie
            return;
        }
        resp_.remaining -= data.size();
        out_.push(std::move(data));
        break;
    case body_framing::chunked: {
        auto& buf = out_.tail();
        const auto before = buf.size();
        append_chunk_header(buf, data.size());
        out_.added(buf.size() - before);
        out_.push(std::move(data));
        out_.append(crlf);
        break;
    }
    case body_framing::eof: out_.push(std::move(data)); break;
    case body_framing::none: return;
    }
    streamed_added();
}

void session::write_file(exchange_impl& ex, int fd, std::uint64_t offset, std::uint64_t length) {
    if (active_ != &ex || !resp_.begun || !resp_.send_body || closed_ || length == 0) {
        ::close(fd);
        return;
    }
    switch (resp_.framing) {
    case body_framing::length:
        if (length > resp_.remaining) {
            ::close(fd);
            abort(ex);
            return;
        }
        resp_.remaining -= length;
        out_.push_file(fd, offset, length);
        break;
    case body_framing::chunked: {
        auto& buf = out_.tail();
        const auto before = buf.size();
        append_chunk_header(buf, length);
        out_.added(buf.size() - before);
        out_.push_file(fd, offset, length);
        out_.append(crlf);
        break;
    }
    case body_framing::eof: out_.push_file(fd, offset, length); break;
    case body_framing::none: ::close(fd); return;
    }
    streamed_added();
}

void session::end(exchange_impl& ex) {
    if (active_ != &ex) return;
    if (!resp_.begun) {
        static const std::vector<response_header> no_headers;
        start_response(200, &no_headers, body_framing::length, 0);
    }
    if (resp_.send_body && !closed_) {
        if (resp_.framing == body_framing::chunked) {
            out_.append(last_chunk);
        } else if (resp_.framing == body_framing::length && resp_.remaining != 0) {
            abort(ex);  // fewer bytes than announced: the client must not wait for the rest
            return;
        }
    }
    finish_response();
}

void session::abort(exchange_impl& ex) {
    if (active_ != &ex) return;
    // Dropping what is still queued is fine: the response is unusable, and
    // the close is what tells the client so.
    gone_ = true;
    close();
    finish_response();
}

void session::send_error(unsigned status, std::string_view reason) {
    log_rejection(status, reason);
    parser_.stop();
    if (building_) building_->clear();
    static const std::vector<response_header> text_plain{{"Content-Type", "text/plain"}};
    std::string body(reason_phrase(status));
    body.push_back('\n');
    head_spec spec;
    spec.status = status;
    spec.headers = &text_plain;
    spec.framing = body_framing::length;
    spec.content_length = body.size();
    spec.connection = connection_token::close;
    auto& buf = out_.tail();
    const auto before = buf.size();
    append_response_head(buf, spec, server_->date());
    buf.append(body);
    out_.added(buf.size() - before);
    close_after_flush_ = true;
    phase_ = read_phase::none;
    read_deadline_ = clock::time_point::max();
}

// One line per rejected request, so an operator can tell a broken client
// from an attack without a packet capture.
void session::log_rejection(unsigned status, std::string_view reason) const {
    if (!log::enabled(log::level::info)) return;
    std::string line = "http: rejected request from ";
    const bool v6 = remote_.address().is_v6();
    if (v6) line += '[';
    line += remote_.address().to_string();
    if (v6) line += ']';
    line += ':';
    line += std::to_string(remote_.port());
    line += ": ";
    line += std::to_string(status);
    line += ' ';
    line += reason_phrase(status);
    line += " (";
    line += reason;
    line += ')';
    log::info(line);
}

void session::finish_response() {
    active_ = nullptr;
    auto& stats = server_->stats();
    stats.in_flight.fetch_sub(1, std::memory_order_relaxed);
    stats.requests.fetch_add(1, std::memory_order_relaxed);
    if (closed_) return;
    if (!keep_alive_ || server_->draining() || peer_eof_) close_after_flush_ = true;
    resp_ = {};
    // Inline answers return to the loop in process(); later ones restart it.
    if (!processing_) process();
}

// Output produced outside process() (a streamed piece, a late answer's
// head) is written at once.
void session::output_added() {
    if (!processing_) flush();
}

// A streamed piece is written at once even from inside on_request: a
// handler running on the reactor (an inline executor) may block between
// pieces, and the client must get each one as it is produced. On EAGAIN the
// rest waits for writability as usual. Whole answers (respond) still wait
// for the end of the pass, so pipelined responses leave in one write.
void session::streamed_added() { flush(); }

void session::flush() {
    if (closed_ || write_wait_pending_) return;
    if (!out_.empty()) {
        int err = 0;
        const auto r = out_.flush(socket_.native_handle(), err);
        if (r == output_queue::result::failed) {
            gone_ = true;
            close();
            return;
        }
        if (r == output_queue::result::would_block) {
            set_write_deadline(after(limits_.write_timeout, clock::now()));
            write_wait_pending_ = true;
            socket_.async_wait(asio::socket_base::wait_write,
                               [self = shared_from_this()](const error_code& ec) { self->on_writable(ec); });
            notify_drain();
            return;
        }
    }
    write_deadline_ = clock::time_point::max();
    notify_drain();
    if (close_after_flush_ && !lingering_ && !active_) start_linger();
}

void session::on_writable(const error_code& ec) {
    write_wait_pending_ = false;
    if (closed_ || ec) return;
    if (active_ || close_after_flush_)
        flush();
    else
        process();  // the backlog shrank: dispatch pipelined requests held back
}

void session::when_drained(std::size_t below, std::function<void()> fn) {
    drain_below_ = below;
    drain_fn_ = std::move(fn);
    notify_drain();
}

void session::notify_drain() {
    if (!drain_fn_ || (!gone_ && out_.pending() > drain_below_)) return;
    // Posted, never called inline: the waiter usually writes more and waits
    // again, which must not recurse.
    asio::post(server_->io(), std::move(drain_fn_));
    drain_fn_ = nullptr;
}

void session::released(exchange_impl& ex, std::unique_ptr<request_data> data) noexcept {
    if (active_ == &ex) {
        // The handler dropped the exchange without finishing the response.
        if (!resp_.begun && !closed_) {
            static const std::vector<response_header> no_headers;
            respond(ex, 500, no_headers, std::string());
        } else {
            abort(ex);
        }
    }
    if (data && !spare_) {
        data->clear();
        spare_ = std::move(data);
    }
}

// ---------------------------------------------------------------- closing

// Half-close, then read until the client closes (or a short timeout), so
// unread input does not turn our close into a reset that destroys the
// response before the client reads it.
void session::start_linger() {
    lingering_ = true;
    phase_ = read_phase::none;
    error_code ec;
    socket_.shutdown(asio::socket_base::shutdown_send, ec);
    if (peer_eof_ || ec) {
        close();
        return;
    }
    set_read_deadline(clock::now() + server_->linger_timeout());
    maybe_read();
}

void session::close() {
    if (closed_) return;
    closed_ = true;
    gone_ = true;
    error_code ec;
    socket_.close(ec);
    timer_.cancel();
    out_.clear();
    parser_.stop();
    server_->session_closed(*this, true);
    notify_drain();
}

void session::drain() {
    if (closed_ || active_ || close_after_flush_) return;
    if (parser_.got_some() || rend_ > rbegin_) return;  // a request is arriving: answer it, then close
    close_after_flush_ = true;
    if (out_.empty() && !write_wait_pending_)
        close();
}

void session::force_close() {
    if (closed_) return;
    server_->stats().force_closed.fetch_add(1, std::memory_order_relaxed);
    close();
}

// ---------------------------------------------------------------- timeouts

session::clock::time_point session::after(std::chrono::milliseconds timeout, clock::time_point now) const noexcept {
    return timeout.count() > 0 ? now + timeout : clock::time_point::max();
}

// Deadlines move with every request, but the timer is only re-armed when one
// comes earlier than its expiry. Since the timer never sleeps longer than
// the shortest timeout (tick), a deadline set from "now" is normally later
// than the expiry, and the hot path never touches the timer queue.
void session::set_read_deadline(clock::time_point t) {
    read_deadline_ = t;
    if (t < armed_) arm_timer(clock::now());
}

void session::set_write_deadline(clock::time_point t) {
    write_deadline_ = t;
    if (t < armed_) arm_timer(clock::now());
}

void session::arm_timer(clock::time_point now) {
    if (closed_) return;
    armed_ = std::min({read_deadline_, write_deadline_, now + server_->tick()});
    timer_.expires_at(armed_);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) { self->on_timer(ec); });
}

void session::on_timer(const error_code& ec) {
    // operation_aborted: re-armed (another wait is pending) or closed.
    if (ec || closed_) return;
    const auto now = clock::now();
    if (now >= write_deadline_) {
        gone_ = true;  // the client stopped reading
        close();
        return;
    }
    if (now >= read_deadline_) {
        if (lingering_ || phase_ == read_phase::idle) {
            close();
            return;
        }
        send_error(408, phase_ == read_phase::body ? "body read timeout" : "header timeout");
        flush();
        if (closed_) return;
    }
    arm_timer(now);
}

}  // namespace m0::http::detail
