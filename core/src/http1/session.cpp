#include "http1/session.hpp"

#include <algorithm>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include <m0/log.hpp>
#include <m0/recycling_allocator.hpp>

#include "http1/byte_stream_impl.hpp"
#include "http1/exchange_impl.hpp"
#include "http/forwarded.hpp"
#include "http/peer.hpp"
#include "http/proxy_protocol.hpp"
#include "http/rejection.hpp"
#include "http/response_rules.hpp"
#include "http/server.hpp"
#include "http/transport.hpp"
#include "http2/h2_session.hpp"
#include "telemetry/request_recorder.hpp"

namespace m0::http::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
constexpr std::size_t initial_read_buffer = 4096;
// At a drain, how long a connection accepted just before it may take to send
// its first request.
constexpr std::chrono::seconds first_request_grace{3};
// At a drain, how long a connection that answered its last request just
// before may take to send the next one (see session::drain).
constexpr std::chrono::seconds next_request_grace{1};
// Free space below which unparsed bytes are moved to the buffer's start.
constexpr std::size_t min_read_space = 1024;
// Pipelined requests are not dispatched while this much output waits.
constexpr std::uint64_t output_high_water = 256 * 1024;
// A closing connection discards at most this much input before it gives up.
constexpr std::size_t max_linger_discard = 1024 * 1024;
constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::string_view cut_short_body = "the client ended the connection before the end of the request body";
// Body bytes reserved up front at most, whatever Content-Length claims.
constexpr std::uint64_t max_body_reserve = 1024 * 1024;
// A streamed body its handler left unread is skipped up to this many bytes
// after the response, to keep the connection; beyond it the connection
// closes (reading a large upload nobody wants costs more than a reconnect).
constexpr std::uint64_t max_unread_body_discard = 256 * 1024;

boost::system::error_code body_error(unsigned status) {
    if (status == 413) return asio::error::message_size;
    if (status == 408) return asio::error::timed_out;
    return boost::system::errc::make_error_code(boost::system::errc::bad_message);
}
}  // namespace

session::session(std::shared_ptr<server> owner, asio::ip::tcp::socket socket, bool proxy_protocol,
                 std::shared_ptr<const tls::server_context> tls, bool http2, asio::ip::tcp::endpoint local)
    : server_(std::move(owner)),
      limits_(server_->limits()),
      recorder_(server_->recorder()),
      socket_(std::move(socket)),
      tls_context_(std::move(tls)),
      timer_(server_->io()),
      parser_(limits_) {
    local_ = local;
    proxy_pending_ = proxy_protocol;
    http2_ = http2;
}

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
    if (local_.address().is_unspecified()) local_ = socket_.local_endpoint(ec);
    update_trust();
    if (log::enabled(log::level::debug)) log::debug(log_prefix() + ": connection opened");
    rcap_ = initial_read_buffer;
    rbuf_.reset(new char[rcap_]);
    const auto now = clock::now();
    if (tls_context_ && !proxy_pending_) {
        // The handshake's deadline at once (start_tls sets it again, no
        // earlier): one timer arm per connection, not the head's and then
        // the handshake's.
        read_deadline_ = after(tls_context_->config().handshake_timeout, now);
        arm_timer(now);
    } else {
        update_read_phase(now);  // arms the timer for the first head's deadline
        if (armed_ == clock::time_point::max()) arm_timer(now);  // no header_timeout: the tick alone
    }
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
    if (proxy_pending_ && !take_proxy_header()) {
        processing_ = false;
        if (closed_) return;
        update_read_phase(clock::now());
        maybe_read();
        return;
    }
    if (tls_context_ && !(tls_ && tls_->established())) {
        processing_ = false;
        if (!tls_) start_tls();
        return;
    }
    // Prior-knowledge h2c (RFC 9113 3.3): the preface instead of a first
    // request. No Upgrade: h2c; TLS clients choose h2 by ALPN instead.
    if (http2_ && !tls_ && rend_ > rbegin_) {
        switch (h2c_preface()) {
            case preface::yes: processing_ = false; hand_over_to_http2(); return;
            case preface::maybe:
                if (!peer_eof_) {
                    processing_ = false;
                    update_read_phase(clock::now());
                    maybe_read();
                    return;
                }
                break;
            case preface::no: break;
        }
        http2_ = false;  // an HTTP/1.1 connection from its first byte
    }
    bool backlogged = false;
    do {
        backlogged = false;
        while (!closed_ && !active_ && !close_after_flush_ && !upgraded_) {
            if (discarding_) {
                if (!discard_body()) break;
                continue;
            }
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
                // partial head, then close. A body cut short is answered
                // 400, as when it is streamed (serve_pull): the half-closed
                // client still reads.
                if (peer_eof_ && parser_.head_done())
                    send_error(400, cut_short_body);
                else if (peer_eof_)
                    close_after_flush_ = true;
                break;
            }
            if (status == parse_status::error) {
                send_error(parser_.error_status(), parser_.error_reason());
                break;
            }
            if (status == parse_status::head_done) {
                // The client waits for this before sending the body; if the
                // body is already arriving it did not wait.
                const bool owe_continue =
                    parser_.expects_continue() && building_->req.version >= 11 && rbegin_ == rend_;
                if (server_->app().stream_body(building_->req)) {
                    // The handler pulls the body; 100 Continue waits for
                    // its first pull.
                    continue_owed_ = owe_continue;
                    body_open_ = true;
                    dispatch();
                    continue;
                }
                if (auto left = parser_.body_left())
                    building_->req.body.reserve(static_cast<std::size_t>(std::min(*left, max_body_reserve)));
                if (owe_continue) out_.append(continue_line);
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
    // A streamed body, and an upgraded stream, are read only on demand: the
    // client is held back by TCP flow control, not by our memory.
    if (body_open_ && !pull_.fn) {
        watch_for_reset();
        return;
    }
    // A lingering close reads (and discards) whatever the stream's owner asked for.
    if (upgraded_ && !stream_read_ && !lingering_) return;
    if (lingering_) {
        rbegin_ = rend_ = 0;
    } else if (!ensure_read_space(!active_ || body_open_ || upgraded_)) {
        // Read-ahead while a request is in flight stops at a full buffer.
        // Otherwise the buffer is full at its largest size: a head line
        // longer than any limit allows.
        if (!active_ && !close_after_flush_) {
            if (parser_.head_done())
                send_error(400, "chunk or trailer line longer than the read buffer");
            else
                send_error(431, "header line longer than the read buffer");
            flush();
        } else if (active_) {
            watch_for_reset();
        }
        return;
    }
    read_pending_ = true;
    read_async();
}

// ---------------------------------------------------------------- transport

std::size_t session::read_now(char* p, std::size_t cap, error_code& ec) {
    // A lingering close only discards what arrives: no need to decrypt it.
    return transport_read(socket_, lingering_ ? nullptr : tls_.get(), p, cap, ec, tls_wants_write_);
}

void session::read_async(bool socket_first) {
    if (!tls_ || lingering_) {
        socket_.async_read_some(asio::buffer(rbuf_.get() + rend_, rcap_ - rend_),
                                [self = shared_from_this()](const error_code& ec, std::size_t n) {
                                    self->on_read(ec, n);
                                });
        return;
    }
    transport_wait_tls(server_->io(), socket_, *tls_, tls_wants_write_, socket_first,
                       [self = shared_from_this()](const error_code& ec) { self->tls_wait_done(ec); });
}

void session::tls_wait_done(const error_code& ec) {
    if (ec)
        on_read(ec, 0);
    else
        tls_read_ready();
}

void session::tls_read_ready() {
    if (closed_) {
        read_pending_ = false;
        return;
    }
    error_code ec;
    const std::size_t n = read_now(rbuf_.get() + rend_, rcap_ - rend_, ec);
    if (ec == asio::error::would_block) {
        read_async(true);
        return;
    }
    on_read(ec, n);
}

void session::start_tls() {
    tls_ = std::make_unique<tls::connection>(*tls_context_, socket_.native_handle());
    if (!http2_) tls_->limit_alpn("http/1.1");  // the context may offer h2 for other listeners
    // Bytes that followed a PROXY header are the client's first TLS bytes.
    if (rend_ > rbegin_) tls_->prepend_input(std::string_view(rbuf_.get() + rbegin_, rend_ - rbegin_));
    rbegin_ = rend_ = 0;
    scheme_ = "https";
    set_read_deadline(after(tls_context_->config().handshake_timeout, clock::now()));
    tls_handshake_step();
}

void session::tls_handshake_step() {
    if (closed_) return;
    const auto wait = [this](asio::socket_base::wait_type type) {
        socket_.async_wait(type, [self = shared_from_this()](const error_code& ec) {
            if (!ec) self->tls_handshake_step();
        });
    };
    switch (tls_->handshake()) {
        case tls::connection::status::done: {
            if (recorder_) recorder_->tls_handshake(tls_->resumed());
            if (log::enabled(log::level::debug)) {
                const auto& info = tls_->info();
                log::debug(log_prefix() + ": TLS handshake done: " + info.cipher_name +
                           (info.resumed ? ", resumed" : "") +
                           (info.server_name.empty() ? "" : ", server name " + info.server_name));
            }
            if (http2_ && tls_->info().alpn == "h2") {
                hand_over_to_http2();
                return;
            }
            http2_ = false;
            // The first request's header timeout starts now.
            phase_ = read_phase::none;
            update_read_phase(clock::now());
            process();
            return;
        }
        case tls::connection::status::want_read: wait(asio::socket_base::wait_read); return;
        case tls::connection::status::want_write: wait(asio::socket_base::wait_write); return;
        case tls::connection::status::closed:
        case tls::connection::status::failed: tls_failed(tls_->failure()); return;
    }
}

namespace {
constexpr std::string_view h2c_preface_bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
}

session::preface session::h2c_preface() const noexcept {
    const std::string_view got(rbuf_.get() + rbegin_, rend_ - rbegin_);
    const std::size_t n = std::min(got.size(), h2c_preface_bytes.size());
    if (got.substr(0, n) != h2c_preface_bytes.substr(0, n)) return preface::no;
    return n == h2c_preface_bytes.size() ? preface::yes : preface::maybe;
}

// The connection goes on as HTTP/2: the socket, its TLS and the bytes
// read so far move to an h2_session, which takes this one's place in the
// server's list; this session ends without a close of its own.
void session::hand_over_to_http2() {
    const auto& policy = *server_->clients();
    peer_address peer{remote_, local_, scheme_, trusts_forwarded_};
    auto next = std::make_shared<http2::h2_session>(server_, std::move(socket_), std::move(tls_),
                                                    std::move(tls_context_), peer, policy.http2_settings);
    const std::string_view first(rbuf_.get() + rbegin_, rend_ - rbegin_);
    closed_ = true;
    timer_.cancel();
    server_->session_handed_over(*this, *next);
    next->start(first);
    rbegin_ = rend_ = 0;
}

// Counted by reason and logged at debug only: a scanner or a broken client
// must not flood the log.
void session::tls_failed(tls::handshake_failure why) {
    if (recorder_) recorder_->tls_handshake_failed(static_cast<std::size_t>(why));
    if (log::enabled(log::level::debug))
        log::debug(log_prefix() + ": TLS handshake failed (" + std::string(tls::to_string(why)) + ")" +
                   (tls_->failure_detail().empty() ? "" : ": " + tls_->failure_detail()));
    if (why == tls::handshake_failure::plain_http) {
        // The client speaks plain HTTP, the one thing it can read: say what
        // went wrong in it, then close.
        tls_.reset();
        tls_context_.reset();
        scheme_ = "http";
        answer_error(400, "This port speaks HTTPS: plain HTTP was sent to it.\n");
        flush();
        return;
    }
    close();
}

void session::on_read(const error_code& ec, std::size_t n) {
    read_pending_ = false;
    if (closed_) return;
    if (ec) {
        if (ec == asio::error::operation_aborted) return;
        if (ec != asio::error::eof || lingering_) {
            if (ec != asio::error::eof) mark_gone();
            close();
            return;
        }
        peer_eof_ = true;
        if (upgraded_) {
            deliver_stream_read();
            return;
        }
        if (active_) {
            // Half-close rule (see http.hpp): a client that shut down its
            // sending side still reads, so it is not gone and its response
            // is written in full, streamed or not; the connection closes
            // after it. A streamed body being pulled ends short; after its
            // body, the handler may want to know (on_peer_eof).
            if (body_open_)
                serve_pull();
            else
                notify_peer_eof();
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
    if (recorder_) recorder_->bytes_in(n);
    if (upgraded_) {
        deliver_stream_read();
        return;
    }
    if (phase_ == read_phase::body) set_read_deadline(after(limits_.body_timeout, clock::now()));
    if (pull_.fn)
        serve_pull();
    else if (active_)
        maybe_read();
    else
        process();
}

void session::dispatch() {
    if (!body_open_) parser_.stop();
    auto data = std::move(building_);
    data->req.remote = remote_;
    data->req.local = local_;
    data->req.scheme = scheme_;
    data->req.tls = tls_ ? &tls_->info() : nullptr;
    if (trusts_forwarded_) resolve_client(data->req);
    ++served_;
    const auto max = limits_.max_requests_per_connection;
    keep_alive_ = data->req.keep_alive && (max == 0 || served_ < max);
    client_closes_ = !data->req.keep_alive;
    version_ = data->req.version;
    is_head_ = data->is_head;
    resp_ = {};
    if (recorder_) dispatched_at_ = clock::now();
    // One exchange per request: its block comes back from the reactor's
    // free list instead of the heap.
    auto ex = std::allocate_shared<exchange_impl>(recycling_allocator<exchange_impl>(), shared_from_this(),
                                                  std::move(data), body_open_);
    active_ = ex.get();
    phase_ = read_phase::none;
    read_deadline_ = clock::time_point::max();
    server_->stats().in_flight.fetch_add(1, std::memory_order_relaxed);
    server_->app().on_request(std::move(ex));
}

// ---------------------------------------------------------------- client address

bool session::take_proxy_header() {
    proxy_header header;
    std::string why;
    // The read buffer grows up to this; a longer v2 header cannot be held.
    const std::size_t max_length = std::max<std::size_t>(limits_.max_header_bytes, limits_.max_request_line);
    const auto status =
        parse_proxy_header(std::string_view(rbuf_.get() + rbegin_, rend_ - rbegin_), max_length, header, why);
    if (status == proxy_parse_status::error) {
        refuse_proxy_header(why);
        return false;
    }
    if (status == proxy_parse_status::need_more) {
        if (peer_eof_) refuse_proxy_header("the connection ended inside the PROXY protocol header");
        return false;
    }
    rbegin_ += header.length;
    if (rbegin_ == rend_ && !read_pending_) rbegin_ = rend_ = 0;
    proxy_pending_ = false;
    if (header.has_addresses) {
        remote_ = header.source;
        local_ = header.destination;
    }
    if (header.ssl) scheme_ = "https";
    update_trust();
    return true;
}

// The peer is a proxy that sent something else than it promised: no HTTP
// answer (it would reach the proxy, not a client), one line in the log.
void session::refuse_proxy_header(std::string_view why) {
    if (log::enabled(log::level::info)) log::info(log_prefix() + ": refused connection: " + std::string(why));
    if (recorder_) recorder_->proxy_header_refused();
    close();
}

void session::update_trust() {
    const auto* policy = server_->clients();
    trusts_forwarded_ = policy && policy->forwarded_trusted.contains(remote_.address());
}

void session::resolve_client(request& req) const {
    apply_forwarding(req, *server_->clients(), recorder_, server_->reactor_index());
}

void session::update_read_phase(clock::time_point now) {
    if (closed_ || lingering_ || pull_.fn || upgraded_) return;  // those keep their own deadlines
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
        idle_since_ = now;
        set_read_deadline(after(served_ == 0 ? limits_.header_timeout : limits_.keepalive_timeout, now));
    }
}

// ---------------------------------------------------------------- responses

void session::start_response(unsigned status, const std::vector<response_header>* headers,
                             body_framing framing, std::uint64_t length) {
    resp_.begun = true;
    resp_.status = status;
    if (recorder_ && recorder_->wants_response_headers() && headers) recorder_->capture(*headers, captured_headers_);
    resp_.framing = framing;
    resp_.send_body = !is_head_ && framing != body_framing::none;
    resp_.remaining = length;
    if (server_->draining() || peer_eof_ || framing == body_framing::eof) keep_alive_ = false;
    if (body_open_) {
        // The handler answers before reading the whole body. A client still
        // waiting for 100 Continue may never send it, and a long rest is not
        // worth skipping: close after the response instead.
        const auto left = parser_.body_left();
        if (continue_owed_ || (left && *left > max_unread_body_discard)) keep_alive_ = false;
    }
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
    if (resp_.send_body) resp_.body_bytes = body.size();
    if (resp_.send_body && !closed_ && !body.empty()) out_.push(std::move(body));
    finish_response();
}

void session::respond_borrowed(exchange_impl& ex, unsigned status, const std::vector<response_header>& headers,
                               std::string_view body) {
    if (active_ != &ex || resp_.begun || !accept_status(ex, status)) return;
    const bool bodiless = !status_has_body(status);
    start_response(status, &headers, bodiless ? body_framing::none : body_framing::length, body.size());
    if (resp_.send_body) resp_.body_bytes = body.size();
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
    if (data.empty()) return;
    const std::size_t size = data.size();
    write_body(ex, size, [&] { out_.push(std::move(data)); });
}

void session::write_shared(exchange_impl& ex, std::shared_ptr<const std::string> data) {
    if (!data || data->empty()) return;
    write_body(ex, data->size(), [&] { out_.push_shared(std::move(data)); });
}

// The pieces become one body write: one chunk header, one flush, so a held
// stream with several messages waiting pays one gathered write for them
// (up to the output queue's iovec limit), not one each.
void session::write_shared_batch(exchange_impl& ex, std::span<const std::shared_ptr<const std::string>> pieces) {
    std::size_t size = 0;
    for (const auto& p : pieces)
        if (p) size += p->size();
    if (size == 0) return;
    write_body(ex, size, [&] {
        for (const auto& p : pieces)
            if (p && !p->empty()) out_.push_shared(p);  // as write_shared: nothing to queue
    });
}

template <class Push>
void session::write_body(exchange_impl& ex, std::size_t size, Push push) {
    if (active_ != &ex || !resp_.begun) return;
    if (!resp_.send_body || closed_) return;
    resp_.body_bytes += size;
    switch (resp_.framing) {
    case body_framing::length:
        if (size > resp_.remaining) {
            abort(ex);  // more than announced: the framing would lie
            return;
        }
        resp_.remaining -= size;
        push();
        break;
    case body_framing::chunked: {
        auto& buf = out_.tail();
        const auto before = buf.size();
        append_chunk_header(buf, size);
        out_.added(buf.size() - before);
        push();
        out_.append(crlf);
        break;
    }
    case body_framing::eof: push(); break;
    case body_framing::none: return;
    }
    streamed_added();
}

void session::write_file(exchange_impl& ex, int fd, std::uint64_t offset, std::uint64_t length) {
    if (active_ != &ex || !resp_.begun || !resp_.send_body || closed_ || length == 0) {
        ::close(fd);
        return;
    }
    resp_.body_bytes += length;
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

void session::end(exchange_impl& ex, const std::vector<response_header>* trailers) {
    if (active_ != &ex) return;
    if (!resp_.begun) {
        static const std::vector<response_header> no_headers;
        start_response(200, &no_headers, body_framing::length, 0);
    }
    if (resp_.send_body && !closed_) {
        if (resp_.framing == body_framing::chunked) {
            if (trailers && !trailers->empty()) {
                // RFC 9112 7.1.2: the last chunk, the trailer fields, CRLF.
                out_.append(std::string_view("0\r\n"));
                for (const auto& t : *trailers) {
                    const auto value = sendable_field(t, false);
                    if (!value) continue;
                    out_.append(t.name);
                    out_.append(std::string_view(": "));
                    out_.append(*value);
                    out_.append(crlf);
                }
                out_.append(crlf);
            } else {
                out_.append(last_chunk);
            }
        } else if (resp_.framing == body_framing::length && resp_.remaining != 0) {
            abort(ex);  // fewer bytes than announced: the client must not wait for the rest
            return;
        }
    }
    finish_response();
}

void session::set_outcome(exchange_impl& ex, request_outcome o) {
    if (active_ == &ex) resp_.outcome = o;
}

void session::abort(exchange_impl& ex) {
    if (active_ != &ex) return;
    // Dropping what is still queued is fine: the response is unusable, and
    // the close is what tells the client so.
    mark_gone();
    close();
    finish_response();
}

void session::send_error(unsigned status, std::string_view reason) {
    log_rejection(status, reason);
    std::string body(reason_phrase(status));
    body.push_back('\n');
    answer_error(status, body);
}

void session::answer_error(unsigned status, std::string_view body) {
    parser_.stop();
    if (building_) building_->clear();
    static const std::vector<response_header> text_plain{{"Content-Type", "text/plain"}};
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
    if (active_) {
        // Answered on the handler's behalf: finish_response records it.
        resp_.status = status;
        resp_.body_bytes = body.size();
    } else {
        record_rejection(status, body.size());
    }
    close_after_flush_ = true;
    phase_ = read_phase::none;
    read_deadline_ = clock::time_point::max();
}

// One line per rejected request, so an operator can tell a broken client
// from an attack without a packet capture.
void session::log_rejection(unsigned status, std::string_view reason) const {
    if (log::enabled(log::level::info)) detail::log_rejection(log_prefix(), status, reason);
}

std::string session::log_prefix() const { return connection_log_prefix(server_->reactor_index(), remote_); }

void session::finish_response() {
    if (recorder_ && active_) record_response();
    active_ = nullptr;
    auto& stats = server_->stats();
    stats.in_flight.fetch_sub(1, std::memory_order_relaxed);
    stats.requests.fetch_add(1, std::memory_order_relaxed);
    gone_fns_.clear();  // the exchange is over: nobody waits for the client any more
    peer_eof_fns_.clear();
    drain_fns_.clear();
    if (body_open_) {
        body_open_ = false;
        deliver_pull(asio::error::operation_aborted, false);
        if (continue_owed_) {
            close_after_flush_ = true;  // the body may never come
        } else {
            discarding_ = true;
            discarded_ = 0;
        }
        continue_owed_ = false;
        read_deadline_ = clock::time_point::max();
        phase_ = read_phase::none;
    }
    if (closed_) return;
    if (!keep_alive_ || server_->draining() || peer_eof_) close_after_flush_ = true;
    resp_ = {};
    // Inline answers return to the loop in process(); later ones restart it.
    if (!processing_) process();
}

void session::record_response() {
    telemetry::response_record r;
    r.req = released_req_ ? released_req_ : &active_->req();
    r.remote = r.req->remote;  // the client as resolved (PROXY header, forwarding headers)
    r.status = resp_.status;
    r.body_bytes = resp_.body_bytes;
    r.duration = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - dispatched_at_);
    r.mount = r.req->script_name;
    r.outcome = resp_.outcome;
    r.response_values = &captured_headers_;
    recorder_->record(r);
    captured_headers_.clear();
}

void session::record_rejection(unsigned status, std::uint64_t body_bytes) {
    detail::record_rejection(recorder_, remote_, status, body_bytes);
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
        const auto before = out_.pending();
        if (tls_ && !tls_->established()) return;  // nothing is written before the handshake ends
        // The connection's last response: it may leave with close_notify.
        const bool linger_follows = close_after_flush_ && !lingering_ && !active_;
        const auto r = transport_flush(out_, socket_, tls_.get(), err, linger_follows);
        if (recorder_) recorder_->bytes_out(before - out_.pending());
        if (r == output_queue::result::failed) {
            mark_gone();
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
    drain_waiters_.push_back({below, std::move(fn)});
    notify_drain();
}

void session::notify_drain() {
    if (drain_waiters_.empty()) return;
    const auto pending = out_.pending();
    // Posted, never called inline: a waiter usually writes more and waits
    // again, which must not recurse or change the list under us.
    auto it = std::remove_if(drain_waiters_.begin(), drain_waiters_.end(), [&](drain_waiter& w) {
        if (!gone_ && !closed_ && pending > w.below) return false;
        asio::post(server_->io(), std::move(w.fn));
        return true;
    });
    drain_waiters_.erase(it, drain_waiters_.end());
}

void session::released(exchange_impl& ex, std::unique_ptr<request_data> data) noexcept {
    if (active_ == &ex && data) {
        // The handler dropped the exchange without finishing the response
        // (a held response whose client left, say). The exchange has handed
        // its request over: the access log and metrics read it from here.
        released_req_ = &data->req;
        if (!resp_.begun && !closed_) {
            static const std::vector<response_header> no_headers;
            respond(ex, 500, no_headers, std::string());
        } else {
            abort(ex);
        }
        released_req_ = nullptr;
    }
    if (data && !spare_) {
        data->clear();
        spare_ = std::move(data);
    }
}

// ---------------------------------------------------------------- streamed request bodies

void session::read_body(exchange_impl& ex, std::size_t max_bytes, body_handler fn) {
    auto answer = [this, &fn](error_code ec, bool last) {
        asio::post(server_->io(), [fn = std::move(fn), ec, last] { fn(ec, std::string(), last); });
    };
    if (closed_) return answer(asio::error::connection_reset, false);
    if (active_ != &ex) return answer(asio::error::operation_aborted, false);
    if (!body_open_) return answer({}, true);  // the end was delivered already
    if (pull_.fn) return answer(asio::error::already_started, false);
    pull_.max = std::max<std::size_t>(max_bytes, 1);
    pull_.fn = std::move(fn);
    if (continue_owed_) {
        continue_owed_ = false;
        // Once the response has begun an interim answer would come too late.
        if (!resp_.begun && rbegin_ == rend_) {
            out_.append(continue_line);
            flush();
            if (closed_) return;
        }
    }
    serve_pull();
}

void session::serve_pull() {
    if (!pull_.fn || closed_) return;
    pull_chunk_.clear();
    parser_.set_body_sink(&pull_chunk_, pull_.max);
    for (;;) {
        auto status = parse_status::need_more;
        if (rbegin_ < rend_) {
            std::size_t used = 0;
            status = parser_.feed(rbuf_.get() + rbegin_, rend_ - rbegin_, used);
            rbegin_ += used;
            if (rbegin_ == rend_ && !read_pending_) rbegin_ = rend_ = 0;
        }
        if (status == parse_status::error) {
            body_failed(parser_.error_status(), parser_.error_reason());
            return;
        }
        if (status == parse_status::complete) {
            body_open_ = false;
            parser_.stop();
            deliver_pull({}, true);
            // Read ahead again, as after a whole body, so a FIN (or a reset)
            // that follows the body is seen while the handler works.
            if (peer_eof_)
                notify_peer_eof();
            else
                maybe_read();
            return;
        }
        if (pull_chunk_.size() >= pull_.max || read_pending_ || peer_eof_) break;
        // Take what the socket already holds, without waiting, so one pull
        // gets up to max_bytes rather than one read buffer.
        if (!ensure_read_space(true)) {
            if (!pull_chunk_.empty()) break;
            body_failed(400, "chunk or trailer line longer than the read buffer");
            return;
        }
        error_code ec;
        const std::size_t n = read_now(rbuf_.get() + rend_, rcap_ - rend_, ec);
        if (ec == asio::error::would_block || ec == asio::error::try_again) break;
        if (ec == asio::error::eof) {
            peer_eof_ = true;
            break;
        }
        if (ec) {
            mark_gone();
            close();
            return;
        }
        rend_ += n;
        if (recorder_) recorder_->bytes_in(n);
    }
    if (!pull_chunk_.empty()) {
        deliver_pull({}, false);
        return;
    }
    if (peer_eof_) {
        // The client ended its side before the end of the body: the request
        // can never be complete, which is the client's fault (RFC 9112
        // section 8), not the handler's. Unless the handler's response has
        // begun (it then goes on: the client only half-closed), the engine
        // answers 400 on its behalf, which the client may still read. The
        // pull fails with eof either way.
        if (!resp_.begun) {
            body_failed(400, cut_short_body, asio::error::eof);
            return;
        }
        body_open_ = false;
        parser_.stop();
        deliver_pull(asio::error::eof, false);
        notify_peer_eof();
        return;
    }
    // Nothing buffered: wait for the socket, for at most body_timeout.
    phase_ = read_phase::body;
    set_read_deadline(after(limits_.body_timeout, clock::now()));
    maybe_read();
}

void session::deliver_pull(const error_code& ec, bool last) {
    // The parser must never write into a sink nobody reads.
    discard_sink_.clear();
    parser_.set_body_sink(&discard_sink_, 0);
    if (!pull_.fn) return;
    if (!discarding_) {
        phase_ = read_phase::none;
        read_deadline_ = clock::time_point::max();
    }
    asio::post(server_->io(), [fn = std::move(pull_.fn), ec, last, chunk = std::move(pull_chunk_)]() mutable {
        fn(ec, std::move(chunk), last);
    });
    pull_.fn = nullptr;
    pull_chunk_ = std::string();
}

void session::body_failed(unsigned status, std::string_view reason, error_code ec) {
    body_open_ = false;
    continue_owed_ = false;
    parser_.stop();
    deliver_pull(ec ? ec : body_error(status), false);
    if (!active_) {
        log_rejection(status, reason);
        close();
        return;
    }
    if (!resp_.begun) {
        // Answered on the handler's behalf; its later calls find the
        // exchange finished and are ignored.
        send_error(status, reason);
        keep_alive_ = false;
        finish_response();
        return;
    }
    log_rejection(status, reason);
    mark_gone();
    close();
    finish_response();
}

bool session::discard_body() {
    discard_sink_.clear();
    parser_.set_body_sink(&discard_sink_, static_cast<std::size_t>(max_unread_body_discard - discarded_));
    std::size_t used = 0;
    const auto status = parser_.feed(rbuf_.get() + rbegin_, rend_ - rbegin_, used);
    rbegin_ += used;
    if (rbegin_ == rend_ && !read_pending_) rbegin_ = rend_ = 0;
    discarded_ += discard_sink_.size();
    discard_sink_.clear();
    if (status == parse_status::complete) {
        discarding_ = false;
        parser_.stop();
        return true;
    }
    if (status == parse_status::error || discarded_ >= max_unread_body_discard || peer_eof_) {
        discarding_ = false;
        parser_.stop();
        close_after_flush_ = true;
    }
    return false;
}

void session::on_drain(exchange_impl& ex, std::function<void()> fn) {
    if (active_ != &ex || closed_) return;
    if (server_->draining()) {
        asio::post(server_->io(), std::move(fn));
        return;
    }
    drain_fns_.push_back(std::move(fn));
}

void session::on_client_gone(exchange_impl& ex, std::function<void()> fn) {
    if (active_ != &ex) return;  // the response ended: nothing to report
    if (gone_) {
        asio::post(server_->io(), std::move(fn));
        return;
    }
    gone_fns_.push_back(std::move(fn));
}

void session::on_peer_eof(exchange_impl& ex, std::function<void()> fn) {
    if (active_ != &ex || gone_) return;  // the response ended, or on_client_gone tells
    if (peer_eof_ && !body_open_) {
        asio::post(server_->io(), std::move(fn));
        return;
    }
    peer_eof_fns_.push_back(std::move(fn));
}

void session::notify_peer_eof() {
    for (auto& fn : peer_eof_fns_) asio::post(server_->io(), std::move(fn));
    peer_eof_fns_.clear();
}

// ---------------------------------------------------------------- upgrade

std::shared_ptr<byte_stream> session::upgrade(exchange_impl& ex, const std::vector<response_header>& headers) {
    if (active_ != &ex || resp_.begun || closed_ || gone_ || close_after_flush_ || version_ < 11 || body_open_ ||
        server_->draining())
        return nullptr;
    head_spec spec;
    spec.status = 101;
    spec.headers = &headers;
    spec.framing = body_framing::none;
    spec.connection = connection_token::upgrade;
    auto& buf = out_.tail();
    const auto before = buf.size();
    append_response_head(buf, spec, server_->date());
    out_.added(buf.size() - before);
    // The exchange is finished; the connection stays open and counted, as
    // the stream, until its owner or a force-close closes it.
    upgraded_ = true;
    keep_alive_ = false;
    resp_.status = 101;
    if (recorder_) record_response();
    active_ = nullptr;
    auto& stats = server_->stats();
    stats.in_flight.fetch_sub(1, std::memory_order_relaxed);
    stats.requests.fetch_add(1, std::memory_order_relaxed);
    gone_fns_.clear();
    peer_eof_fns_.clear();
    drain_fns_.clear();  // the exchange's; the stream registers its own
    resp_ = {};
    phase_ = read_phase::none;
    read_deadline_ = clock::time_point::max();
    if (!processing_) flush();
    return std::make_shared<byte_stream_impl>(shared_from_this());
}

void session::stream_read(byte_stream::read_handler fn) {
    if (closed_ || close_after_flush_) {
        asio::post(server_->io(), [fn = std::move(fn)] { fn(asio::error::operation_aborted, {}); });
        return;
    }
    if (stream_read_) {
        asio::post(server_->io(), [fn = std::move(fn)] { fn(asio::error::already_started, {}); });
        return;
    }
    stream_read_ = std::move(fn);
    deliver_stream_read();
}

void session::deliver_stream_read() {
    if (!stream_read_) return;
    if (rbegin_ < rend_) {
        // Copied: the read buffer is reused before a posted call runs.
        std::string data(rbuf_.get() + rbegin_, rend_ - rbegin_);
        rbegin_ = rend_;
        if (!read_pending_) rbegin_ = rend_ = 0;
        asio::post(server_->io(), [fn = std::move(stream_read_), data = std::move(data)] { fn({}, data); });
        stream_read_ = nullptr;
        return;
    }
    if (peer_eof_) {
        asio::post(server_->io(), [fn = std::move(stream_read_)] { fn(asio::error::eof, {}); });
        stream_read_ = nullptr;
        return;
    }
    maybe_read();
}

void session::stream_write(std::string&& data) {
    if (stream_closed() || data.empty()) return;
    out_.push(std::move(data));
    if (!processing_) flush();
}

void session::stream_write_shared(std::shared_ptr<const std::string> data) {
    if (stream_closed()) return;
    out_.push_shared(std::move(data));
    if (!processing_) flush();
}

void session::stream_on_drain(std::function<void()> fn) {
    if (closed_) return;
    if (server_->draining()) {
        asio::post(server_->io(), std::move(fn));
        return;
    }
    drain_fns_.push_back(std::move(fn));
}

void session::stream_close() {
    if (stream_closed()) return;
    close_after_flush_ = true;
    drop_drain_fns();
    if (stream_read_)
        asio::post(server_->io(), [fn = std::move(stream_read_)] { fn(asio::error::operation_aborted, {}); });
    stream_read_ = nullptr;
    if (!processing_) flush();
}

// ---------------------------------------------------------------- closing

// Half-close, then read until the client closes (or a short timeout), so
// unread input does not turn our close into a reset that destroys the
// response before the client reads it. Unless no input can come: then the
// close is at once, as nginx's, and saves a wake-up, a timer and four system
// calls on every connection a client ends after one request.
void session::start_linger() {
    lingering_ = true;
    phase_ = read_phase::none;
    if (!tls_ || tls_->send_close_notify()) {
        linger();
        return;
    }
    // The end of the last response, held to leave with close_notify, did
    // not fit in the socket: it goes as the socket drains, under the write
    // timeout, and the close waits for it (http/transport.hpp).
    read_deadline_ = clock::time_point::max();  // nothing is read meanwhile
    set_write_deadline(after(limits_.write_timeout, clock::now()));
    write_wait_pending_ = true;
    transport_finish_tls(socket_, *tls_, [self = shared_from_this()](const error_code& ec) {
        self->write_wait_pending_ = false;
        if (self->closed_) return;
        if (ec) {
            self->close();
            return;
        }
        self->write_deadline_ = clock::time_point::max();
        self->linger();
    });
}

void session::linger() {
    if (nothing_more_coming()) {
        close();
        return;
    }
    error_code ec;
    socket_.shutdown(asio::socket_base::shutdown_send, ec);
    if (peer_eof_ || ec) {
        close();
        return;
    }
    set_read_deadline(clock::now() + server_->linger_timeout());
    maybe_read();
}

// The last request said it was the client's last (which forbids it to send
// another: RFC 9112, 9.6) and was read whole, and no byte of anything else
// waits, in m0's buffer, in TLS's or in the socket's: a close sends FIN after
// the response, not a reset. A connection m0 ends for its own reasons
// (draining, max requests, an error) lingers: its client may be sending.
bool session::nothing_more_coming() {
    if (!client_closes_ || served_ == 0 || upgraded_ || body_open_ || discarding_ || continue_owed_) return false;
    if (rbegin_ != rend_ || parser_.got_some() || (tls_ && tls_->has_buffered_input())) return false;
    error_code ec;
    return socket_.available(ec) == 0 && !ec;
}

void session::close() {
    if (closed_) return;
    closed_ = true;
    if (log::enabled(log::level::debug))
        log::debug(log_prefix() + ": connection closed after " + std::to_string(served_) + " request(s)" +
                   (gone_ ? " (client gone)" : ""));
    mark_gone();
    error_code ec;
    socket_.close(ec);
    timer_.cancel();
    out_.clear();
    parser_.stop();
    body_open_ = discarding_ = false;
    server_->session_closed(*this, true);
    deliver_pull(asio::error::connection_reset, false);
    if (stream_read_) asio::post(server_->io(), [fn = std::move(stream_read_)] { fn(asio::error::operation_aborted, {}); });
    stream_read_ = nullptr;
    drop_drain_fns();
    notify_drain();
}

// Callbacks no one will run, destroyed from a posted handler: one may hold
// the last reference to the exchange, whose release clears drain_fns_ again
// (finish_response), or to the byte stream being closed.
void session::drop_drain_fns() {
    if (!drain_fns_.empty()) asio::post(server_->io(), [dropped = std::move(drain_fns_)] {});
    drain_fns_.clear();
}

void session::watch_for_reset() {
    if (error_wait_pending_ || closed_) return;
    error_wait_pending_ = true;
    socket_.async_wait(asio::socket_base::wait_error, [self = shared_from_this()](const error_code& ec) {
        self->error_wait_pending_ = false;
        if (ec || self->closed_) return;
        // Also woken by urgent data: only a pending socket error (a reset)
        // means the client is gone. Not re-armed either way, so urgent data
        // cannot make it spin; reads and writes still see a reset.
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(self->socket_.native_handle(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
            self->mark_gone();
            self->close();
        }
    });
}

void session::mark_gone() {
    gone_ = true;
    for (auto& fn : gone_fns_) asio::post(server_->io(), std::move(fn));
    gone_fns_.clear();
}

void session::drain() {
    if (closed_) return;
    // A held response or an upgraded stream is told to finish: its owner
    // ends the body or its protocol, then the connection closes.
    for (auto& fn : drain_fns_) asio::post(server_->io(), std::move(fn));
    drain_fns_.clear();
    if (upgraded_ || active_ || close_after_flush_) return;
    if (parser_.got_some() || rend_ > rbegin_) return;  // a request is arriving: answer it, then close
    // Accepted before the drain, its first request not here yet: the client
    // chose this process and is likely sending it (a reload or a replacement
    // drains a process under load all the time). Answer it, then close; a
    // connection that stays silent (a browser's preconnect) is closed after
    // a short grace instead of holding the drain up to the header timeout.
    if (served_ == 0) {
        set_read_deadline(std::min(read_deadline_, clock::now() + first_request_grace));
        return;
    }
    // Between two requests. A client that keeps its connection busy (a
    // load generator, a page fetching its assets) may have sent the next
    // one already, still in the socket, or be about to: closing now would
    // cut a request it sent (it reads a reset or an end of stream where a
    // response should be). Bytes in the socket, or idle for less than
    // next_request_grace: wait for the request (the rest of the grace) and
    // answer it with Connection: close. Idle for longer: close at once.
    if (phase_ == read_phase::idle) {  // its timer closes it when the grace ends
        const auto now = clock::now();
        error_code ec;
        const bool bytes_waiting = (socket_.available(ec) > 0 && !ec) || (tls_ && tls_->has_buffered_input());
        const auto since = bytes_waiting ? now : idle_since_;
        if (now - since < next_request_grace) {
            set_read_deadline(std::min(read_deadline_, since + next_request_grace));
            return;
        }
    }
    close_after_flush_ = true;
    if (out_.empty() && !write_wait_pending_)
        close();
}

void session::force_close() {
    if (closed_) return;
    // A lingering connection has written its last response in full and only
    // waits for the client to read it: closing it cuts nothing.
    // Nor does closing one between two requests.
    const bool between_requests =
        phase_ == read_phase::idle && served_ > 0 && !active_ && !parser_.got_some() && rend_ == rbegin_;
    if (!lingering_ && !between_requests) server_->stats().force_closed.fetch_add(1, std::memory_order_relaxed);
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
        mark_gone();  // the client stopped reading
        close();
        return;
    }
    if (now >= read_deadline_) {
        if (proxy_pending_) {
            refuse_proxy_header("no complete PROXY protocol header within http.header_timeout");
            return;
        }
        if (tls_ && !tls_->established()) {
            tls_failed(tls::handshake_failure::timeout);
            return;
        }
        if (lingering_ || phase_ == read_phase::idle || discarding_) {
            close();
            return;
        }
        if (pull_.fn) {
            body_failed(408, "body read timeout");
            if (closed_) return;
            arm_timer(now);
            return;
        }
        send_error(408, phase_ == read_phase::body ? "body read timeout" : "header timeout");
        flush();
        if (closed_) return;
    }
    arm_timer(now);
}

}  // namespace m0::http::detail
