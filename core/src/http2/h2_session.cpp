#include "http2/h2_session.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <nghttp2/nghttp2.h>

#include <m0/log.hpp>
#include <m0/recycling_allocator.hpp>

#include "http/client_policy.hpp"
#include "http/rejection.hpp"
#include "http/response_rules.hpp"
#include "http/server.hpp"
#include "http/transport.hpp"
#include "http2/h2_exchange.hpp"
#include "telemetry/request_recorder.hpp"

namespace m0::http2 {

namespace asio = boost::asio;
using boost::system::error_code;
using http::response_header;

namespace {

constexpr std::size_t read_buffer_size = 16 * 1024;
// nghttp2's output is taken while less than this waits for the socket; the
// client must read before more frames are made (a SETTINGS or PING flood
// from a client that does not read stops here).
constexpr std::uint64_t output_high_water = 64 * 1024;
// Longest the connection's timer sleeps.
constexpr std::chrono::milliseconds max_tick{5000};
constexpr std::chrono::milliseconds min_tick{50};

h2_session& self_of(void* user) { return *static_cast<h2_session*>(user); }

std::string_view view(const std::uint8_t* p, std::size_t n) { return {reinterpret_cast<const char*>(p), n}; }

int on_begin_headers_cb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    return self_of(user).on_begin_headers(frame->hd.stream_id);
}

int on_begin_frame_cb(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
    if (hd->type != NGHTTP2_HEADERS) return 0;
    return self_of(user).on_begin_headers_frame(hd->stream_id);
}

int on_header_cb(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
                 const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    return self_of(user).on_header(frame->hd.stream_id, frame->headers.cat == NGHTTP2_HCAT_HEADERS,
                                   view(name, namelen), view(value, valuelen));
}

int on_frame_recv_cb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    const bool ping_ack = frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK);
    return self_of(user).on_frame_recv(frame->hd.type, frame->hd.flags, frame->hd.stream_id, ping_ack);
}

int on_data_cb(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data, std::size_t len,
               void* user) {
    return self_of(user).on_data(stream_id, data, len);
}

int on_stream_close_cb(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code, void* user) {
    return self_of(user).on_stream_close(stream_id, error_code);
}

int on_frame_send_cb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    self_of(user).on_frame_sent(frame->hd.type, frame->hd.flags, frame->hd.stream_id,
                                frame->hd.type == NGHTTP2_GOAWAY ? frame->goaway.error_code : 0);
    return 0;
}

int on_invalid_frame_cb(nghttp2_session*, const nghttp2_frame*, int, void* user) {
    self_of(user).on_invalid_frame();
    return 0;
}

ssize_t read_response_cb(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                         nghttp2_data_source* source, void* user) {
    return self_of(user).read_response(*static_cast<h2_stream*>(source->ptr), buf, length, flags);
}

// One set of callbacks for every connection.
nghttp2_session_callbacks* callbacks() {
    static nghttp2_session_callbacks* const cbs = [] {
        nghttp2_session_callbacks* c = nullptr;
        nghttp2_session_callbacks_new(&c);
        nghttp2_session_callbacks_set_on_begin_frame_callback(c, on_begin_frame_cb);
        nghttp2_session_callbacks_set_on_begin_headers_callback(c, on_begin_headers_cb);
        nghttp2_session_callbacks_set_on_header_callback(c, on_header_cb);
        nghttp2_session_callbacks_set_on_frame_recv_callback(c, on_frame_recv_cb);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, on_data_cb);
        nghttp2_session_callbacks_set_on_stream_close_callback(c, on_stream_close_cb);
        nghttp2_session_callbacks_set_on_frame_send_callback(c, on_frame_send_cb);
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(c, on_invalid_frame_cb);
        return c;
    }();
    return cbs;
}

// Fields a handler may not send over HTTP/2: framing and connection
// management are the engine's, and RFC 9113 8.2.2 forbids the
// connection-specific ones outright.
// Response or trailer fields as nghttp2 wants them: lowercase names, in
// storage that lives as long as this object (nghttp2 copies them on submit).
class field_list {
public:
    // Empties the list, keeping its buffers.
    void clear() {
        nv_.clear();
        lowered_.clear();
        names_.clear();
    }
    void reserve(std::size_t fields, std::size_t name_bytes) {
        nv_.reserve(fields);
        names_.reserve(name_bytes);
    }
    void add_literal(std::string_view name, std::string_view value) { push(name, value); }
    // A handler's field: lowercased; unsafe or engine-owned ones dropped.
    void add_handler_field(const response_header& h) {
        const auto value = http::detail::sendable_field(h, true);
        if (!value) return;
        const std::size_t at = names_.size();
        for (char c : h.name) names_.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
        lowered_.push_back({nv_.size(), at, h.name.size()});
        push({}, *value);
    }
    nghttp2_nv* data() {
        // names_ is complete: point the lowered names into it.
        for (const auto& l : lowered_) {
            nv_[l.index].name = reinterpret_cast<std::uint8_t*>(names_.data() + l.at);
            nv_[l.index].namelen = l.size;
        }
        return nv_.data();
    }
    std::size_t size() const { return nv_.size(); }

private:
    void push(std::string_view name, std::string_view value) {
        nghttp2_nv nv;
        nv.name = reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data()));
        nv.namelen = name.size();
        nv.value = reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data()));
        nv.valuelen = value.size();
        nv.flags = NGHTTP2_NV_FLAG_NONE;  // copied at submit: frames are made later, in mem_send
        nv_.push_back(nv);
    }
    struct lowered {
        std::size_t index, at, size;
    };
    std::vector<nghttp2_nv> nv_;
    std::vector<lowered> lowered_;
    std::string names_;
};

}  // namespace

h2_session::h2_session(std::shared_ptr<http::detail::server> owner, asio::ip::tcp::socket socket,
                       std::unique_ptr<tls::connection> tls, std::shared_ptr<const tls::server_context> tls_context,
                       const http::detail::peer_address& peer, const settings& config)
    : server_(std::move(owner)),
      limits_(server_->limits()),
      config_(config),
      recorder_(server_->recorder()),
      socket_(std::move(socket)),
      tls_(std::move(tls)),
      tls_context_(std::move(tls_context)),
      peer_(peer),
      timer_(server_->io()),
      rbuf_(new char[read_buffer_size]) {
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    // Windows are granted as handlers read (nghttp2_session_consume).
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_max_continuations(opt, 8);
    // The client's resets spend the connection's budget (on_frame_recv),
    // which ends it with ENHANCE_YOUR_CALM, counted; nghttp2's own limiter
    // (INTERNAL_ERROR) stays behind it as a backstop, at twice the numbers.
    nghttp2_option_set_stream_reset_rate_limit(opt, 2ull * config_.reset_burst, 2ull * config_.reset_rate);
    nghttp2_option_set_max_outbound_ack(opt, 1000);
    nghttp2_option_set_max_settings(opt, 32);
    nghttp2_session_server_new2(&ng_, callbacks(), this, opt);
    nghttp2_option_del(opt);
    abuse_tokens_ = config_.reset_burst;
}

h2_session::~h2_session() {
    if (!closed_) server_->session_closed(*this, false);
    nghttp2_session_del(ng_);
}

asio::io_context& h2_session::io() noexcept { return server_->io(); }

std::string h2_session::log_prefix() const {
    return http::detail::connection_log_prefix(server_->reactor_index(), peer_.remote) + " (h2)";
}

void h2_session::start(std::string_view first_bytes) {
    const auto now = clock::now();
    last_read_ = idle_since_ = abuse_refilled_ = now_ = now;
    if (recorder_) recorder_->http2_connection();
    if (log::enabled(log::level::debug)) log::debug(log_prefix() + ": speaks HTTP/2");
    const nghttp2_settings_entry entries[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, config_.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, config_.initial_window_size},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, config_.max_frame_size},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, config_.max_header_list_size},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
    };
    // The last entry only when WebSocket over HTTP/2 is on.
    nghttp2_submit_settings(ng_, NGHTTP2_FLAG_NONE, entries, std::size(entries) - (config_.websocket ? 0 : 1));
    arm_timer();
    if (!first_bytes.empty()) {
        if (recorder_) recorder_->bytes_in(first_bytes.size());
        feed(first_bytes.data(), first_bytes.size());
    } else {
        send();
    }
    if (server_->draining()) drain();
    read_more();
}

// ---------------------------------------------------------------- requests

h2_stream* h2_session::find(std::int32_t stream_id) noexcept {
    auto it = streams_.find(stream_id);
    return it == streams_.end() ? nullptr : it->second.get();
}

// RFC 9113 5.1.1: opening a stream closes every idle stream below it, and
// HEADERS on one of those is a connection error. nghttp2 ignores such
// HEADERS (it cannot tell them from late trailers): the ids a client
// skipped are remembered here, as ranges (a few: a client that skips on
// every stream only loses the oldest ones' check).
int h2_session::on_begin_headers_frame(std::int32_t stream_id) {
    if (stream_id % 2 == 0) return 0;  // nghttp2 refuses even ids itself
    if (stream_id > highest_stream_) {
        if (highest_stream_ + 2 < stream_id) {
            if (skipped_.size() == max_skipped_ranges) skipped_.erase(skipped_.begin());
            skipped_.push_back({highest_stream_ + 2, stream_id - 2});
        }
        highest_stream_ = stream_id;
        return 0;
    }
    for (const auto& [low, high] : skipped_)
        if (stream_id >= low && stream_id <= high) return NGHTTP2_ERR_CALLBACK_FAILURE;  // GOAWAY PROTOCOL_ERROR
    return 0;
}

int h2_session::on_begin_headers(std::int32_t stream_id) {
    // Both come back from free lists: the stream's block from the reactor's
    // (recycling_allocator), its request's buffers from this connection's.
    auto st = std::allocate_shared<h2_stream>(recycling_allocator<h2_stream>(), stream_id);
    if (!spare_data_.empty()) {
        st->data = std::move(spare_data_.back());
        spare_data_.pop_back();
    } else {
        st->data = std::make_unique<http::detail::request_data>();
        st->data->req.headers.reserve(16);
    }
    st->last_input = now_;
    streams_.emplace(stream_id, std::move(st));
    if (recorder_) recorder_->http2_stream();
    return 0;
}

int h2_session::on_header(std::int32_t stream_id, bool trailer, std::string_view name, std::string_view value) {
    h2_stream* st = find(stream_id);
    if (!st) return 0;
    // RFC 9113 6.5.2: each field counts its name, its value and 32. nghttp2
    // 1.52 does not hold clients to the limit it announces: m0 does, and
    // keeps decoding (the HPACK state must stay in step) without storing.
    st->header_bytes += static_cast<std::uint32_t>(std::min<std::size_t>(name.size() + value.size() + 32, 1u << 30));
    ++st->header_count;
    if (st->header_bytes > config_.max_header_list_size || st->header_count > config_.max_header_count) {
        st->head_too_large = "request head over http2.max_header_list_size or http2.max_header_count";
        return 0;
    }
    // One field as HTTP/1.1 counts it ("name: value" and its CRLF): the
    // same http.max_header_size on both engines.
    if (name.size() + value.size() + 4 > limits_.max_header_size) {
        st->head_too_large = "a request header field over http.max_header_size";
        return 0;
    }
    if (trailer || st->head_too_large) return 0;  // request trailers are not passed on
    auto& head = st->data->head;
    const h2_stream::field_at at{static_cast<std::uint32_t>(head.size()), static_cast<std::uint32_t>(name.size()),
                                 static_cast<std::uint32_t>(head.size() + name.size()),
                                 static_cast<std::uint32_t>(value.size())};
    if (name == "cookie") {
        // RFC 9113 8.2.3: split cookie fields are one field again for HTTP/1.1 semantics.
        if (!st->cookies.empty()) st->cookies.append("; ");
        st->cookies.append(value);
        return 0;
    }
    head.append(name);
    head.append(value);
    if (!name.empty() && name[0] == ':') {
        if (name == ":method") st->method = at;
        else if (name == ":path") st->path = at;
        else if (name == ":authority") st->authority = at;
        else if (name == ":scheme") st->scheme = at;
        else if (name == ":protocol") st->protocol = at;
        return 0;  // nghttp2 has checked the pseudo-header set
    }
    st->fields.push_back(at);
    return 0;
}

int h2_session::on_frame_recv(std::uint8_t type, std::uint8_t flags, std::int32_t stream_id, bool ping_ack) {
    if (ping_ack) {
        ping_sent_ = clock::time_point::max();
        return 0;
    }
    if (type == NGHTTP2_RST_STREAM) {
        charge_abuse();  // rapid reset (CVE-2023-44487) spends the same budget
        return 0;
    }
    if (type != NGHTTP2_HEADERS && type != NGHTTP2_DATA) return 0;
    h2_stream* st = find(stream_id);
    if (!st) return 0;
    const bool end_stream = flags & NGHTTP2_FLAG_END_STREAM;
    if (type == NGHTTP2_HEADERS && !st->head_done) {
        st->head_done = true;
        st->body_done = end_stream;
        head_ready(*st);
        return 0;
    }
    if (end_stream && !st->body_done) {  // the last DATA, or trailers
        st->body_done = true;
        request_complete(*st);
    }
    return 0;
}

bool h2_session::make_request(h2_stream& st) {
    auto& d = *st.data;
    auto& head = d.head;
    if (!st.cookies.empty()) {
        const h2_stream::field_at at{static_cast<std::uint32_t>(head.size()), 6,
                                     static_cast<std::uint32_t>(head.size() + 6),
                                     static_cast<std::uint32_t>(st.cookies.size())};
        head.append("cookie");
        head.append(st.cookies);
        st.fields.push_back(at);
        st.cookies.clear();
    }
    const auto name_of = [&](const h2_stream::field_at& f) { return std::string_view(head).substr(f.name, f.name_size); };
    const auto value_of = [&](const h2_stream::field_at& f) {
        return std::string_view(head).substr(f.value, f.value_size);
    };
    // CONNECT (no :path) is for tunnels, which m0 does not offer; an
    // extended CONNECT (RFC 8441) opens a WebSocket.
    if (!st.method || !st.path) return false;
    auto& req = d.req;
    req.method = value_of(*st.method);
    if (req.method == "CONNECT") {
        if (!st.protocol || value_of(*st.protocol) != "websocket") return false;
        // Shown to the handler as the HTTP/1.1 handshake it knows (RFC 8441
        // 5: the same Sec-WebSocket-Version, protocols, extensions; the key
        // and its accept belong to HTTP/1.1 only, so one is made up here).
        st.websocket = true;
        for (auto [name, value] : {std::pair<std::string_view, std::string_view>{"upgrade", "websocket"},
                                   {"connection", "upgrade"},
                                   {"sec-websocket-key", "AAAAAAAAAAAAAAAAAAAAAA=="}}) {
            st.fields.push_back({static_cast<std::uint32_t>(head.size()), static_cast<std::uint32_t>(name.size()),
                                 static_cast<std::uint32_t>(head.size() + name.size()),
                                 static_cast<std::uint32_t>(value.size())});
            head.append(name);
            head.append(value);
        }
        req.method = "GET";
    }
    req.target = value_of(*st.path);
    const auto q = req.target.find('?');
    req.path = req.target.substr(0, q);
    req.query = q == std::string_view::npos ? std::string_view() : req.target.substr(q + 1);
    req.version = 20;
    req.keep_alive = true;
    d.is_head = req.method == "HEAD";
    // :authority is the Host of HTTP/2 (RFC 9113 8.3.1), and wins over a
    // host field the client also sent.
    if (st.authority) req.headers.push_back({"host", value_of(*st.authority)});
    for (const auto& f : st.fields) {
        const auto name = name_of(f);
        if (st.authority && name == "host") continue;
        req.headers.push_back({name, value_of(f)});
    }
    req.remote = peer_.remote;
    req.local = peer_.local;
    req.scheme = peer_.scheme;
    req.tls = tls_ ? &tls_->info() : nullptr;
    if (peer_.trusts_forwarded)
        http::detail::apply_forwarding(req, *server_->clients(), recorder_, server_->reactor_index());
    return true;
}

void h2_session::head_ready(h2_stream& st) {
    if (st.head_too_large) {
        answer_error(st, 431, st.head_too_large);
        return;
    }
    if (!make_request(st)) {
        answer_error(st, 405, "CONNECT: m0 offers no tunnels, only WebSockets (RFC 8441)");
        return;
    }
    if (auto length = st.data->req.header("content-length")) {
        std::uint64_t n = 0;
        const auto r = std::from_chars(length->data(), length->data() + length->size(), n);
        if (r.ec == std::errc() && n > limits_.max_body_size) {
            answer_error(st, 413, "Content-Length over http.max_body_size");
            return;
        }
    }
    if (st.body_done) {
        request_complete(st);
        return;
    }
    const auto expect = st.data->req.header("expect");
    const bool owe_continue = expect && http::ascii_iequals(*expect, "100-continue");
    if (st.websocket || server_->app().stream_body(st.data->req)) {
        st.streamed = true;
        st.continue_owed = owe_continue;  // sent at the handler's first pull
        request_complete(st);
        return;
    }
    // Otherwise the body is read whole first (on_data, then request_complete):
    // a client waiting for 100 Continue is told to send it now.
    if (owe_continue) send_continue(st);
}

void h2_session::send_continue(h2_stream& st) {
    field_list fields;
    fields.add_literal(":status", "100");
    nghttp2_submit_headers(ng_, NGHTTP2_FLAG_NONE, st.id, nullptr, fields.data(), fields.size(), nullptr);
}

// Dispatches a streamed request at its head, a whole one at its end.
void h2_session::request_complete(h2_stream& st) {
    if (st.upgraded) {
        deliver_stream_read(st);  // the client ended its side of the WebSocket
        return;
    }
    if (st.dispatched || st.waiting) {
        serve_pull(st);  // the end of a streamed body
        return;
    }
    if (st.finished) return;  // answered by the engine
    auto it = streams_.find(st.id);
    if (it == streams_.end()) return;
    if (running_ >= config_.max_concurrent_streams) {
        st.waiting = true;
        waiting_.push_back(it->second);
        return;
    }
    dispatch(it->second);
}

void h2_session::dispatch_waiting() {
    while (!waiting_.empty() && running_ < config_.max_concurrent_streams && !closed_) {
        auto st = std::move(waiting_.front());
        waiting_.pop_front();
        st->waiting = false;
        if (st->gone || st->closed || st->finished) continue;  // answered by the engine meanwhile (413, 408)
        dispatch(st);
    }
}

void h2_session::dispatch(const stream_ptr& st) {
    ++running_;
    ++served_;
    st->dispatched = true;
    if (recorder_) st->dispatched_at = clock::now();
    server_->stats().in_flight.fetch_add(1, std::memory_order_relaxed);
    const auto max = config_.max_requests_per_connection;
    if (max != 0 && served_ >= max && !goaway_sent_) {
        // This one is the last: later streams are refused, and the client
        // retries them on a new connection (they were never processed).
        goaway_sent_ = true;
        nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR, nullptr, 0);
    }
    auto ex = std::allocate_shared<h2_exchange>(recycling_allocator<h2_exchange>(), shared_from_this(), st);
    server_->app().on_request(std::move(ex));
}

int h2_session::on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t len) {
    // The connection window is given back at once; each stream's only as
    // its handler reads (or at once for a body read whole, bounded by
    // http.max_body_size).
    nghttp2_session_consume_connection(ng_, len);
    h2_stream* st = find(stream_id);
    if (!st) return 0;
    st->last_input = now_;
    st->body_received += len;
    if (st->upgraded) {
        if (!st->gone && !st->ended) {
            st->inbound.append(reinterpret_cast<const char*>(data), len);
            deliver_stream_read(*st);
        } else {
            nghttp2_session_consume_stream(ng_, stream_id, len);
        }
        return 0;
    }
    if (st->finished || st->released || st->gone) {
        nghttp2_session_consume_stream(ng_, stream_id, len);  // nobody reads it any more
        return 0;
    }
    if (st->body_received > limits_.max_body_size) {
        nghttp2_session_consume_stream(ng_, stream_id, len);
        fail_pull(*st, asio::error::message_size);
        if (st->dispatched && st->begun)
            reset_stream(*st, NGHTTP2_CANCEL);
        else
            answer_error(*st, 413, "body over http.max_body_size");
        return 0;
    }
    if (st->streamed) {
        st->inbound.append(reinterpret_cast<const char*>(data), len);
        serve_pull(*st);
    } else {
        st->data->req.body.append(reinterpret_cast<const char*>(data), len);
        nghttp2_session_consume_stream(ng_, stream_id, len);
    }
    return 0;
}

int h2_session::on_stream_close(std::int32_t stream_id, std::uint32_t error_code) {
    auto it = streams_.find(stream_id);
    if (it == streams_.end()) return 0;
    const stream_ptr st = std::move(it->second);
    streams_.erase(it);
    st->closed = true;
    // Closed before its response was complete: reset by the client (or by
    // the engine for it), so whoever still works on it stops.
    if (error_code != NGHTTP2_NO_ERROR || !st->ended || !st->out.empty()) mark_gone(*st);
    st->out.clear();
    if (!st->dispatched || st->released) recycle(*st);
    if (streams_.empty()) idle_since_ = now_;
    return 0;
}

void h2_session::on_frame_sent(std::uint8_t type, std::uint8_t flags, std::int32_t stream_id,
                               std::uint32_t goaway_code) {
    if (type == NGHTTP2_RST_STREAM) {
        auto own = std::find(own_resets_.begin(), own_resets_.end(), stream_id);
        if (own != own_resets_.end())
            own_resets_.erase(own);
        else
            charge_abuse();  // nghttp2 reset it for something the client did
        return;
    }
    if (type == NGHTTP2_GOAWAY) {
        goaway_sent_ = true;
        if (goaway_code == NGHTTP2_ENHANCE_YOUR_CALM && recorder_) recorder_->http2_enhance_your_calm();
        return;
    }
    if ((type == NGHTTP2_HEADERS || type == NGHTTP2_DATA) && (flags & NGHTTP2_FLAG_END_STREAM)) {
        // The response is complete while the request body still comes:
        // RFC 9113 8.1 lets the server stop it with NO_ERROR.
        // A WebSocket's client ends its side after the close handshake.
        h2_stream* st = find(stream_id);
        if (st && !st->body_done && !st->upgraded) reset_stream(*st, NGHTTP2_NO_ERROR);
    }
}

void h2_session::on_invalid_frame() { charge_abuse(); }

void h2_session::charge_abuse() {
    const auto now = clock::now();
    const double elapsed = std::chrono::duration<double>(now - abuse_refilled_).count();
    abuse_refilled_ = now;
    abuse_tokens_ = std::min<double>(config_.reset_burst, abuse_tokens_ + elapsed * config_.reset_rate);
    abuse_tokens_ -= 1;
    if (abuse_tokens_ >= 0 || goaway_sent_ || closed_) return;
    if (log::enabled(log::level::debug))
        log::debug(log_prefix() + ": too many resets and invalid frames: GOAWAY ENHANCE_YOUR_CALM");
    terminate(NGHTTP2_ENHANCE_YOUR_CALM);
}

void h2_session::terminate(std::uint32_t error_code) {
    if (closed_) return;
    nghttp2_session_terminate_session(ng_, error_code);
    goaway_sent_ = true;
}

void h2_session::reset_stream(h2_stream& st, std::uint32_t error_code) {
    if (st.closed || closed_) return;
    own_resets_.push_back(st.id);
    nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, st.id, error_code);
}

// ---------------------------------------------------------------- streamed request bodies

void h2_session::read_body(h2_stream& st, std::size_t max_bytes, http::body_handler fn) {
    error_code refuse;
    if (st.pull.fn)
        refuse = asio::error::already_started;
    else if (client_gone(st))
        refuse = asio::error::connection_reset;
    else if (st.finished)
        refuse = asio::error::operation_aborted;
    if (refuse) {
        asio::post(io(), [fn = std::move(fn), refuse] { fn(refuse, {}, false); });
        return;
    }
    st.pull = {std::max<std::size_t>(max_bytes, 1), std::move(fn)};
    if (st.continue_owed) {
        st.continue_owed = false;
        send_continue(st);
    }
    st.last_input = clock::now();  // the body timeout runs from the pull
    serve_pull(st);
    send();
}

void h2_session::serve_pull(h2_stream& st) {
    if (!st.pull.fn) return;
    std::string chunk;
    if (!st.inbound.empty()) {
        const std::size_t take = std::min(st.pull.max, st.inbound.size());
        if (take == st.inbound.size()) {
            chunk = std::move(st.inbound);
            st.inbound.clear();
        } else {
            chunk.assign(st.inbound, 0, take);
            st.inbound.erase(0, take);
        }
        // The client may send as much again: the window follows the reads.
        if (!st.closed && !closed_) nghttp2_session_consume_stream(ng_, st.id, take);
    } else if (!st.body_done) {
        return;  // on_data serves it
    }
    const bool last = st.body_done && st.inbound.empty();
    auto fn = std::move(st.pull.fn);
    st.pull = {};
    asio::post(io(), [fn = std::move(fn), chunk = std::move(chunk), last]() mutable { fn({}, std::move(chunk), last); });
}

void h2_session::fail_pull(h2_stream& st, error_code ec) {
    if (!st.pull.fn) return;
    auto fn = std::move(st.pull.fn);
    st.pull = {};
    asio::post(io(), [fn = std::move(fn), ec] { fn(ec, {}, false); });
}

// ---------------------------------------------------------------- responses

bool h2_session::accept_status(h2_stream& st, unsigned status) {
    if (status >= 200 && status <= 999) return true;
    log::error("http: handler answered " + std::string(st.data->req.method) + " " +
               std::string(st.data->req.target) + " with status " + std::to_string(status) +
               ", which is not a final status; sent 500 instead");
    static const std::vector<response_header> no_headers;
    st.ended = true;
    submit_head(st, 500, &no_headers, 0, false);
    finish(st);
    send();
    return false;
}

void h2_session::submit_head(h2_stream& st, unsigned status, const std::vector<response_header>* headers,
                             std::optional<std::uint64_t> content_length, bool with_body) {
    st.begun = true;
    st.status = status;
    st.send_body = with_body;
    st.last_output = clock::now();
    if (recorder_ && recorder_->wants_response_headers() && headers) recorder_->capture(*headers, st.captured_headers);
    char status_text[4];
    std::to_chars(status_text, status_text + 3, status);
    char length_text[24];
    std::string_view length_view;
    if (content_length && http::detail::status_has_body(status)) {
        auto r = std::to_chars(length_text, length_text + sizeof length_text, *content_length);
        length_view = std::string_view(length_text, r.ptr - length_text);
    }
    // One list per reactor thread, its buffers kept from response to
    // response (nghttp2 copies the fields on submit).
    static thread_local field_list fields;
    fields.clear();
    std::size_t name_bytes = 0;
    if (headers)
        for (const auto& h : *headers) name_bytes += h.name.size();
    fields.reserve(4 + (headers ? headers->size() : 0), name_bytes);
    fields.add_literal(":status", std::string_view(status_text, 3));
    fields.add_literal("server", "m0");
    fields.add_literal("date", server_->date());
    if (!length_view.empty()) fields.add_literal("content-length", length_view);
    if (headers)
        for (const auto& h : *headers) fields.add_handler_field(h);
    nghttp2_data_provider body;
    body.source.ptr = &st;
    body.read_callback = read_response_cb;
    if (nghttp2_submit_response(ng_, st.id, fields.data(), fields.size(), with_body ? &body : nullptr) != 0)
        mark_gone(st);  // the stream is no longer open
}

void h2_session::respond(h2_stream& st, unsigned status, const std::vector<response_header>& headers,
                         std::string&& body) {
    if (st.finished || st.begun || closed_ || st.gone || !accept_status(st, status)) return;
    const std::uint64_t size = body.size();
    const bool with_body = http::detail::status_has_body(status) && !st.data->is_head && size > 0;
    if (with_body) {
        st.body_bytes = size;
        st.out.push(std::move(body));
    }
    st.ended = true;
    submit_head(st, status, &headers, size, with_body);
    finish(st);
    send_soon();
}

void h2_session::begin(h2_stream& st, unsigned status, const std::vector<response_header>& headers,
                       std::optional<std::uint64_t> content_length) {
    if (st.finished || st.begun || closed_ || st.gone || !accept_status(st, status)) return;
    const bool with_body = http::detail::status_has_body(status) && !st.data->is_head;
    if (with_body) st.remaining = content_length;
    submit_head(st, status, &headers, content_length, with_body);
    send_soon();
}

void h2_session::write(h2_stream& st, std::uint64_t size, const std::function<void()>& push) {
    if (!st.begun || st.finished || closed_ || st.gone || !st.send_body) return;
    if (st.remaining) {
        if (size > *st.remaining) {
            abort(st);  // more than announced: the framing would lie
            return;
        }
        *st.remaining -= size;
    }
    st.body_bytes += size;
    push();
    resume(st);
    send();
}

void h2_session::write_file(h2_stream& st, int fd, std::uint64_t offset, std::uint64_t length) {
    if (!st.begun || st.finished || closed_ || st.gone || !st.send_body || length == 0) {
        ::close(fd);
        return;
    }
    bool taken = false;
    write(st, length, [&] {
        st.out.push_file(fd, offset, length);
        taken = true;
    });
    if (!taken) ::close(fd);  // over the announced length: the stream was aborted instead
}

void h2_session::end(h2_stream& st, const std::vector<response_header>* trailers) {
    if (st.finished || closed_) return;
    if (!st.begun) {
        static const std::vector<response_header> no_headers;
        respond(st, 200, no_headers, std::string());
        return;
    }
    if (st.remaining && *st.remaining != 0) {
        abort(st);  // fewer bytes than announced: the client must not take it as complete
        return;
    }
    if (trailers && st.send_body && !st.gone)
        for (const auto& t : *trailers)
            if (http::detail::sendable_field(t, true)) st.trailers.push_back(t);
    st.ended = true;
    resume(st);
    finish(st);
    send_soon();
}

void h2_session::abort(h2_stream& st) {
    if (st.finished || closed_) return;
    finish(st);
    reset_stream(st, NGHTTP2_INTERNAL_ERROR);
    mark_gone(st);
    send();
}

void h2_session::resume(h2_stream& st) {
    if (!st.deferred || st.closed || closed_) return;
    st.deferred = false;
    nghttp2_session_resume_data(ng_, st.id);
}

long h2_session::read_response(h2_stream& st, std::uint8_t* buf, std::size_t length, std::uint32_t* flags) {
    const long n = st.out.copy_into(buf, length);
    if (n < 0) {
        const int err = errno;  // log_prefix() formats addresses, which may clear errno
        log::error(log_prefix() + ": response body file read failed: " + std::strerror(err) + "; stream reset");
        own_resets_.push_back(st.id);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (n > 0) {
        st.last_output = now_;
        notify_drained(st);
    }
    if (st.out.empty() && st.ended) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!st.trailers.empty()) {
            field_list fields;
            for (const auto& t : st.trailers) fields.add_handler_field(t);
            if (fields.size() > 0) {
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
                nghttp2_submit_trailer(ng_, st.id, fields.data(), fields.size());
            }
        }
        return n;
    }
    if (n == 0) {
        st.deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    return n;
}

void h2_session::answer_error(h2_stream& st, unsigned status, std::string_view reason) {
    if (st.begun || st.finished) return;
    std::string body(http::reason_phrase(status));
    body.push_back('\n');
    static const std::vector<response_header> text_plain{{"Content-Type", "text/plain"}};
    const auto size = body.size();
    st.body_bytes = size;
    st.out.push(std::move(body));
    st.ended = true;
    if (!st.dispatched) {
        // No handler ever saw it: counted as a rejection, and against the
        // connection's budget (a client answered with errors over and over
        // is probing, not browsing).
        st.finished = true;
        charge_abuse();
        http::detail::record_rejection(recorder_, peer_.remote, status, size);
        if (log::enabled(log::level::info))
            http::detail::log_rejection(log_prefix() + ": stream " + std::to_string(st.id), status, reason);
        submit_head(st, status, &text_plain, size, true);
    } else {
        submit_head(st, status, &text_plain, size, true);
        finish(st);
    }
    send();
}

void h2_session::finish(h2_stream& st) {
    if (st.finished && st.dispatched) return;
    st.finished = true;
    if (!st.dispatched) return;
    auto& stats = server_->stats();
    stats.in_flight.fetch_sub(1, std::memory_order_relaxed);
    stats.requests.fetch_add(1, std::memory_order_relaxed);
    if (recorder_) record(st);
    st.gone_fns.clear();  // the exchange is over: nobody waits for the client any more
    st.drain_fns.clear();
    fail_pull(st, asio::error::operation_aborted);
}

void h2_session::record(const h2_stream& st) {
    telemetry::response_record r;
    r.req = &st.data->req;
    r.remote = r.req->remote;
    r.status = st.status;
    r.body_bytes = st.body_bytes;
    r.duration = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - st.dispatched_at);
    r.mount = r.req->script_name;
    r.outcome = st.outcome;
    r.response_values = &st.captured_headers;
    recorder_->record(r);
}

void h2_session::mark_gone(h2_stream& st) {
    if (st.gone) return;
    st.gone = true;
    for (auto& fn : st.gone_fns) asio::post(io(), std::move(fn));
    st.gone_fns.clear();
    // Nobody to drain for any more: dropped later, from the reactor (a
    // callback may hold the last reference to the exchange, whose release
    // would clear drain_fns while they are being cleared).
    drop_later(st.drain_fns);
    fail_pull(st, asio::error::connection_reset);
    if (st.stream_read)
        asio::post(io(), [fn = std::move(st.stream_read)] { fn(asio::error::connection_reset, {}); });
    st.stream_read = nullptr;
    notify_drained(st);
}

void h2_session::when_drained(h2_stream& st, std::size_t below, std::function<void()> fn) {
    st.drain_waiters.push_back({below, std::move(fn)});
    notify_drained(st);
}

void h2_session::notify_drained(h2_stream& st) {
    if (st.drain_waiters.empty()) return;
    const auto pending = st.out.pending();
    const bool gone = client_gone(st);
    auto it = std::remove_if(st.drain_waiters.begin(), st.drain_waiters.end(), [&](h2_stream::drain_waiter& w) {
        if (!gone && pending > w.below) return false;
        asio::post(io(), std::move(w.fn));
        return true;
    });
    st.drain_waiters.erase(it, st.drain_waiters.end());
}

void h2_session::drop_later(std::vector<std::function<void()>>& fns) {
    if (!fns.empty()) asio::post(io(), [dropped = std::move(fns)] {});
    fns.clear();
}

void h2_session::on_client_gone(h2_stream& st, std::function<void()> fn) {
    if (client_gone(st))
        asio::post(io(), std::move(fn));
    else if (!st.finished)
        st.gone_fns.push_back(std::move(fn));
}

void h2_session::on_drain(h2_stream& st, std::function<void()> fn) {
    if (st.finished || st.gone) return;
    if (draining_ || closed_)
        asio::post(io(), std::move(fn));
    else
        st.drain_fns.push_back(std::move(fn));
}

// The request's buffers go back to the connection once neither nghttp2
// nor a handler can reach the stream.
void h2_session::recycle(h2_stream& st) noexcept {
    if (!st.data) return;
    if (spare_data_.size() < max_spare_requests) {
        st.data->clear();
        spare_data_.push_back(std::move(st.data));
    }
    st.data.reset();
}

void h2_session::released(h2_stream& st) noexcept {
    --running_;
    st.released = true;
    if (!st.finished && !closed_ && !st.gone) {
        // The handler dropped the exchange without finishing its response.
        if (!st.begun) {
            static const std::vector<response_header> no_headers;
            respond(st, 500, no_headers, std::string());
        } else {
            abort(st);
        }
    } else if (!st.finished) {
        finish(st);
    }
    if (st.closed) recycle(st);
    if (closed_) return;
    dispatch_waiting();
    send_soon();
}

// ---------------------------------------------------------------- WebSocket over HTTP/2

std::shared_ptr<http::byte_stream> h2_session::upgrade(const std::shared_ptr<h2_stream>& sp,
                                                       const std::vector<response_header>& headers) {
    h2_stream& st = *sp;
    if (!st.websocket || st.begun || st.finished || st.gone || st.closed || closed_ || draining_) return nullptr;
    // RFC 8441 5: 200 instead of 101; the HTTP/1.1 handshake's own fields
    // (Upgrade, Connection, Sec-WebSocket-Accept) have no place in it.
    std::vector<response_header> kept;
    for (const auto& h : headers)
        if (!http::ascii_iequals(h.name, "Sec-WebSocket-Accept") && !http::ascii_iequals(h.name, "Upgrade"))
            kept.push_back(h);
    submit_head(st, 200, &kept, std::nullopt, true);
    st.upgraded = true;
    finish(st);  // the exchange is done; the stream lives on as the byte stream
    send_soon();
    return std::make_shared<h2_byte_stream>(shared_from_this(), sp);
}

void h2_session::stream_read(h2_stream& st, http::byte_stream::read_handler fn) {
    error_code refuse;
    if (st.ended || closed_)
        refuse = asio::error::operation_aborted;
    else if (st.gone)
        refuse = asio::error::connection_reset;
    else if (st.stream_read)
        refuse = asio::error::already_started;
    if (refuse) {
        asio::post(io(), [fn = std::move(fn), refuse] { fn(refuse, {}); });
        return;
    }
    st.stream_read = std::move(fn);
    deliver_stream_read(st);
}

void h2_session::deliver_stream_read(h2_stream& st) {
    if (!st.stream_read) return;
    if (!st.inbound.empty()) {
        std::string data = std::move(st.inbound);
        st.inbound.clear();
        // The client may send as much again once this is read.
        if (!st.closed && !closed_) {
            nghttp2_session_consume_stream(ng_, st.id, data.size());
            send_soon();
        }
        asio::post(io(), [fn = std::move(st.stream_read), data = std::move(data)] { fn({}, data); });
        st.stream_read = nullptr;
        return;
    }
    if (st.body_done) {
        asio::post(io(), [fn = std::move(st.stream_read)] { fn(asio::error::eof, {}); });
        st.stream_read = nullptr;
    }
}

void h2_session::stream_write(h2_stream& st, const std::function<void()>& push) {
    if (stream_closed(st) || closed_) return;
    push();
    resume(st);
    send();
}

void h2_session::stream_on_drain(h2_stream& st, std::function<void()> fn) {
    if (closed_ || stream_closed(st)) return;
    if (draining_)
        asio::post(io(), std::move(fn));
    else
        st.drain_fns.push_back(std::move(fn));
}

// What is queued goes out, then END_STREAM; the client answers with its
// own (or the engine resets the stream for it: on_frame_sent).
void h2_session::stream_close(h2_stream& st) {
    if (stream_closed(st) || closed_) return;
    st.ended = true;
    drop_later(st.drain_fns);
    if (st.stream_read)
        asio::post(io(), [fn = std::move(st.stream_read)] { fn(asio::error::operation_aborted, {}); });
    st.stream_read = nullptr;
    resume(st);
    send_soon();
}

// ---------------------------------------------------------------- I/O

void h2_session::feed(const char* data, std::size_t n) {
    last_read_ = now_ = clock::now();
    sending_ = true;  // nghttp2 must not be asked for output from inside its own callbacks
    const auto rv = nghttp2_session_mem_recv(ng_, reinterpret_cast<const std::uint8_t*>(data), n);
    sending_ = false;
    if (rv < 0) {
        if (rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC) {
            if (log::enabled(log::level::debug)) log::debug(log_prefix() + ": not an HTTP/2 connection preface");
            close();
            return;
        }
        if (log::enabled(log::level::debug))
            log::debug(log_prefix() + ": " + nghttp2_strerror(static_cast<int>(rv)) + ": GOAWAY");
        terminate(rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
    }
    dispatch_waiting();
    send();
}

void h2_session::read_more() {
    if (closed_ || read_pending_ || peer_eof_) return;
    if (!lingering_ && out_.pending() >= output_high_water) {
        read_paused_ = true;  // flush() reads again once the client has read
        return;
    }
    read_paused_ = false;
    read_pending_ = true;
    if (!tls_ || lingering_) {
        socket_.async_read_some(asio::buffer(rbuf_.get(), read_buffer_size),
                                [self = shared_from_this()](const error_code& ec, std::size_t n) { self->on_read(ec, n); });
        return;
    }
    wait_tls(false);
}

void h2_session::wait_tls(bool socket_first) {
    http::detail::transport_wait_tls(io(), socket_, *tls_, tls_wants_write_, socket_first,
                                     [self = shared_from_this()](const error_code& ec) { self->tls_wait_done(ec); });
}

void h2_session::tls_wait_done(const error_code& ec) {
    if (ec)
        on_read(ec, 0);
    else
        tls_read_ready();
}

void h2_session::tls_read_ready() {
    if (closed_) {
        read_pending_ = false;
        return;
    }
    error_code ec;
    const std::size_t n = http::detail::transport_read(socket_, tls_.get(), rbuf_.get(), read_buffer_size, ec,
                                                       tls_wants_write_);
    if (ec == asio::error::would_block) {
        wait_tls(true);
        return;
    }
    on_read(ec, n);
}

void h2_session::on_read(const error_code& ec, std::size_t n) {
    read_pending_ = false;
    if (closed_) return;
    if (lingering_) {
        if (ec)
            close();
        else
            read_more();
        return;
    }
    if (ec) {
        if (ec == asio::error::operation_aborted) return;
        if (ec != asio::error::eof) {
            close();  // a reset: every stream's client is gone
            return;
        }
        // The client sends no more. Like an HTTP/1.1 half-close it still
        // reads: open streams are answered, then the connection closes.
        peer_eof_ = true;
        reset_unfinishable();
        maybe_finish();
        return;
    }
    if (recorder_) recorder_->bytes_in(n);
    feed(rbuf_.get(), n);
    read_more();
}

void h2_session::send() {
    if (sending_ || closed_) return;
    sending_ = true;
    now_ = clock::now();
    for (;;) {
        bool took = false;
        while (out_.pending() < output_high_water) {
            const std::uint8_t* data = nullptr;
            const auto n = nghttp2_session_mem_send(ng_, &data);
            if (n < 0) {
                if (log::enabled(log::level::debug))
                    log::debug(log_prefix() + ": " + nghttp2_strerror(static_cast<int>(n)));
                sending_ = false;
                close();
                return;
            }
            if (n == 0) break;
            out_.append(std::string_view(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n)));
            took = true;
        }
        if (!took) break;
        flush();
        // Written in full: nghttp2 may have more (it stopped at the mark).
        if (closed_ || write_wait_pending_ || !out_.empty()) break;
    }
    sending_ = false;
    if (!closed_ && out_.empty() && !write_wait_pending_) {
        blocked_since_ = clock::time_point::max();
        if (read_paused_) read_more();
        maybe_finish();
    }
}

// Answers completed in one reactor pass (a pool's completions, several
// streams of one connection) leave in one write, after the pass, as
// pipelined HTTP/1.1 responses do; streamed pieces go at once (write()).
void h2_session::send_soon() {
    if (send_posted_ || closed_) return;
    send_posted_ = true;
    asio::post(io(), [self = shared_from_this()] {
        self->send_posted_ = false;
        self->send();
    });
}

void h2_session::flush() {
    if (closed_ || write_wait_pending_ || out_.empty()) return;
    int err = 0;
    const auto before = out_.pending();
    const auto r = http::detail::transport_flush(out_, socket_, tls_.get(), err);
    if (recorder_) recorder_->bytes_out(before - out_.pending());
    if (r == http::detail::output_queue::result::failed) {
        close();
        return;
    }
    if (r == http::detail::output_queue::result::would_block) {
        if (blocked_since_ == clock::time_point::max()) blocked_since_ = clock::now();
        write_wait_pending_ = true;
        socket_.async_wait(asio::socket_base::wait_write,
                           [self = shared_from_this()](const error_code& ec) { self->on_writable(ec); });
        return;
    }
    blocked_since_ = clock::time_point::max();
}

void h2_session::on_writable(const error_code& ec) {
    write_wait_pending_ = false;
    if (closed_ || ec) return;
    flush();
    if (!write_wait_pending_) send();
}

void h2_session::maybe_finish() {
    if (closed_ || lingering_ || sending_ || !out_.empty() || write_wait_pending_) return;
    const bool quiet = streams_.empty() && waiting_.empty();
    const bool done = (!nghttp2_session_want_read(ng_) && !nghttp2_session_want_write(ng_)) ||
                      (peer_eof_ && quiet) || (draining_ && goaway_sent_ && quiet);
    if (done) start_linger();
}

bool h2_session::unfinishable(const h2_stream& st) const {
    if (!peer_eof_) return false;
    if (!st.body_done && !st.finished) return true;  // an answer made already still goes out
    return !st.out.empty() && (nghttp2_session_get_stream_remote_window_size(ng_, st.id) <= 0 ||
                               nghttp2_session_get_remote_window_size(ng_) <= 0);
}

void h2_session::reset_unfinishable() {
    std::vector<stream_ptr> stuck;
    for (auto& [id, st] : streams_)
        if (unfinishable(*st)) stuck.push_back(st);
    for (auto& st : stuck) {
        reset_stream(*st, NGHTTP2_CANCEL);
        mark_gone(*st);
    }
    if (!stuck.empty()) send();
}

// Half-close, then read until the client closes (or a short timeout), so
// unread input does not turn the close into a reset that destroys the
// last frames (a GOAWAY) before the client reads them.
void h2_session::start_linger() {
    lingering_ = true;
    if (!tls_) {
        linger();
        return;
    }
    // What TLS holds goes first, within the write timeout (the linger
    // deadline meanwhile: on_timer closes at it).
    linger_until_ = limits_.write_timeout.count() > 0 ? clock::now() + limits_.write_timeout
                                                      : clock::time_point::max();
    http::detail::transport_finish_tls(socket_, *tls_, [self = shared_from_this()](const error_code& ec) {
        if (self->closed_) return;
        if (ec) {
            self->close();
            return;
        }
        self->linger();
    });
}

void h2_session::linger() {
    error_code ec;
    socket_.shutdown(asio::socket_base::shutdown_send, ec);
    if (peer_eof_ || ec) {
        close();
        return;
    }
    linger_until_ = clock::now() + server_->linger_timeout();
    read_more();
}

void h2_session::close() {
    if (closed_) return;
    closed_ = true;
    if (log::enabled(log::level::debug))
        log::debug(log_prefix() + ": connection closed after " + std::to_string(served_) + " stream(s)");
    for (auto& [id, st] : streams_) mark_gone(*st);
    for (auto& st : waiting_) mark_gone(*st);
    waiting_.clear();
    streams_.clear();
    error_code ec;
    socket_.close(ec);
    timer_.cancel();
    out_.clear();
    server_->session_closed(*this, true);
}

void h2_session::drain() {
    if (closed_ || draining_) return;
    draining_ = true;
    if (!goaway_sent_) {
        goaway_sent_ = true;
        // Streams up to the last one seen are answered; the client retries
        // later ones elsewhere (RFC 9113 6.8).
        nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(ng_),
                              NGHTTP2_NO_ERROR, nullptr, 0);
    }
    for (auto& [id, st] : streams_) {
        for (auto& fn : st->drain_fns) asio::post(io(), std::move(fn));
        st->drain_fns.clear();
    }
    send();
}

void h2_session::force_close() {
    if (closed_) return;
    if (!lingering_ && (!streams_.empty() || running_ > 0))
        server_->stats().force_closed.fetch_add(1, std::memory_order_relaxed);
    close();
}

// ---------------------------------------------------------------- timeouts

void h2_session::arm_timer() {
    if (closed_) return;
    auto tick = std::min<clock::duration>(server_->tick(), max_tick);
    if (config_.ping_interval.count() > 0) tick = std::min<clock::duration>(tick, config_.ping_interval);
    if (config_.ping_timeout.count() > 0) tick = std::min<clock::duration>(tick, config_.ping_timeout);
    timer_.expires_after(std::max<clock::duration>(tick, min_tick));
    timer_.async_wait([self = shared_from_this()](const error_code& ec) { self->on_timer(ec); });
}

void h2_session::on_timer(const error_code& ec) {
    if (ec || closed_) return;
    const auto now = clock::now();
    const auto expired = [now](clock::time_point since, std::chrono::milliseconds timeout) {
        return timeout.count() > 0 && since != clock::time_point::max() && now - since >= timeout;
    };
    if (lingering_) {
        if (now >= linger_until_) {
            close();
            return;
        }
        arm_timer();
        return;
    }
    if (expired(blocked_since_, limits_.write_timeout)) {
        close();  // the client stopped reading
        return;
    }
    if (expired(ping_sent_, config_.ping_timeout)) {
        if (log::enabled(log::level::debug)) log::debug(log_prefix() + ": no answer to PING: closed");
        close();
        return;
    }
    if (ping_sent_ == clock::time_point::max() && expired(last_read_, config_.ping_interval)) {
        ping_sent_ = now;
        nghttp2_submit_ping(ng_, NGHTTP2_FLAG_NONE, nullptr);
    }
    if (streams_.empty() && waiting_.empty() && !goaway_sent_ &&
        expired(idle_since_, served_ == 0 ? limits_.header_timeout : limits_.keepalive_timeout)) {
        goaway_sent_ = true;
        nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(ng_),
                              NGHTTP2_NO_ERROR, nullptr, 0);
    }
    // Per stream: a client that stopped opening its window, a body that
    // stopped coming, a head that never ends.
    std::vector<stream_ptr> stalled, slow_body;
    bool slow_head = false;
    for (auto& [id, st] : streams_) {
        if (!st->out.empty() && (expired(st->last_output, limits_.write_timeout) || unfinishable(*st)))
            stalled.push_back(st);
        else if (!st->head_done && expired(st->last_input, limits_.header_timeout)) slow_head = true;
        else if (st->head_done && !st->body_done && !st->finished && (st->pull.fn || !st->dispatched) &&
                 expired(st->last_input, limits_.body_timeout))
            slow_body.push_back(st);
    }
    for (auto& st : stalled) {
        reset_stream(*st, NGHTTP2_CANCEL);
        mark_gone(*st);
    }
    for (auto& st : slow_body) {
        fail_pull(*st, asio::error::timed_out);
        if (st->begun)
            reset_stream(*st, NGHTTP2_CANCEL);
        else
            answer_error(*st, 408, "body not received within http.body_timeout");
    }
    if (slow_head) terminate(NGHTTP2_PROTOCOL_ERROR);  // HPACK state forbids dropping one stream's head
    send();
    if (!closed_) arm_timer();
}

}  // namespace m0::http2
