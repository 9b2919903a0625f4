#include "http/server.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

namespace m0::http::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// After an accept error such as EMFILE, wait this long before the next try
// instead of spinning on a listener that stays readable.
constexpr std::chrono::milliseconds accept_retry_delay{50};
constexpr std::chrono::milliseconds max_linger{2000};
// Connections taken from one listener before their sessions start.
constexpr std::size_t max_accept_burst = 64;
}  // namespace

server::server(reactor_context& ctx, handler& h)
    : io_(*ctx.io),
      handler_(h),
      limits_(ctx.limits ? ctx.limits : &default_limits_),
      stats_(ctx.stats ? ctx.stats : &own_stats_),
      recorder_(ctx.recorder),
      clients_(ctx.client_policy),
      reactor_index_(ctx.index) {
    for (listener* l : ctx.listeners) {
        listener_slot slot;
        slot.source = l;
        const std::size_t i = listeners_.size();
        slot.proxy_protocol = clients_ && i < clients_->proxy_protocol.size() && clients_->proxy_protocol[i];
        slot.tls = clients_ && clients_->tls_contexts && i < clients_->tls.size() && clients_->tls[i];
        slot.http2 = clients_ && i < clients_->http2.size() && clients_->http2[i];
        if (const auto bound = l->local_endpoint(); !bound.address().is_unspecified() && bound.port() != 0)
            slot.local = bound;
        slot.retry = std::make_unique<asio::steady_timer>(io_);
        listeners_.push_back(std::move(slot));
    }
    std::chrono::milliseconds tick{0};
    for (auto t : {limits_->header_timeout, limits_->body_timeout, limits_->write_timeout,
                   limits_->keepalive_timeout})
        if (t.count() > 0 && (tick.count() == 0 || t < tick)) tick = t;
    tick_ = tick.count() > 0 ? tick : std::chrono::milliseconds(std::chrono::hours(1));
    linger_ = limits_->header_timeout.count() > 0 ? std::min(limits_->header_timeout, max_linger) : max_linger;
}

server::~server() {
    // Sessions hold the server; any still linked here are being torn down
    // with the io_context.
    sessions_.clear();
}

void server::start() {
    for (std::size_t i = 0; i < listeners_.size(); ++i) accept_next(i);
}

void server::accept_next(std::size_t i) {
    auto& slot = listeners_[i];
    if (slot.accepting) return;
    // Beyond the connection limit the listener is left alone: the kernel
    // backlog holds new clients (or another worker takes them) until a
    // connection here closes. Not while draining: the reactor cancelled its
    // listeners first, so an accept now only takes what a listener still
    // holds for this reactor (a scheduler's hand-off queue), connections
    // whose clients are sending to this process and that no one else will
    // answer; then it fails with operation_aborted.
    if (!draining_ && connections() >= limits_->max_connections_per_reactor) return;
    slot.accepting = true;
    slot.source->async_accept([self = shared_from_this(), i](error_code ec, asio::ip::tcp::socket socket) {
        self->on_accept(i, ec, std::move(socket));
    });
}

// Connections are taken in bursts: after each accept the next one is issued
// at once (Asio tries it on the spot, so a queued connection completes
// without waiting for the reactor), and the sessions only start once an
// accept finds the backlog empty. Otherwise each new session's first request
// would be dispatched between two accepts, and a reactor blocked in long
// handlers (an inline executor) would take one connection per handler. The
// end of a burst is seen by a posted check: it runs after an accept that
// completed on the spot, and finds a newer check posted by it.
void server::on_accept(std::size_t i, const error_code& ec, asio::ip::tcp::socket socket) {
    auto& slot = listeners_[i];
    slot.accepting = false;
    if (ec) {
        start_burst(i);
        if (ec == asio::error::operation_aborted || draining_) return;
        slot.retry->expires_after(accept_retry_delay);
        slot.retry->async_wait([self = shared_from_this(), i](const error_code& wait_ec) {
            if (!wait_ec) self->accept_next(i);
        });
        return;
    }
    stats_->accepted.fetch_add(1, std::memory_order_relaxed);
    slot.burst.push_back(std::move(socket));
    if (draining_) {
        // Completed as the drain began: its client is sending a request here.
        start_burst(i);
        accept_next(i);  // and what else the listener still holds
        return;
    }
    if (slot.burst.size() >= max_accept_burst) {
        start_burst(i);
        accept_next(i);
        return;
    }
    accept_next(i);
    if (!slot.accepting) {  // at the connection limit
        start_burst(i);
        return;
    }
    const auto mark = ++slot.burst_mark;
    asio::post(io_, [self = shared_from_this(), i, mark] {
        if (self->listeners_[i].burst_mark == mark) self->start_burst(i);
    });
}

void server::start_burst(std::size_t i) {
    auto& slot = listeners_[i];
    auto burst = std::move(slot.burst);
    slot.burst.clear();
    ++slot.burst_mark;  // checks still queued are stale
    // Connections keep the TLS context they start with; a reload only
    // changes which one later connections get.
    std::shared_ptr<const tls::server_context> tls;
    if (slot.tls && !burst.empty()) tls = clients_->tls_contexts->get();
    for (auto& socket : burst) {
        auto s = std::make_shared<session>(shared_from_this(), std::move(socket), slot.proxy_protocol, tls, slot.http2,
                                           slot.local);
        s->start();
        // Accepted, so its client is sending a request to this process: the
        // session answers it and closes (a silent one after a short grace).
        if (draining_) s->drain();
    }
}

std::size_t server::connections() const noexcept {
    std::size_t n = sessions_.size();
    for (const auto& slot : listeners_) n += slot.burst.size();
    return n;
}

void server::session_opened(connection& s) {
    sessions_.push_back(s);
    stats_->live_connections.fetch_add(1, std::memory_order_relaxed);
}

void server::session_handed_over(connection& from, connection& to) {
    if (!from.is_linked()) return;
    sessions_.insert(sessions_.iterator_to(from), to);
    sessions_.erase(sessions_.iterator_to(from));
}

void server::session_closed(connection& s, bool resume) {
    if (!s.is_linked()) return;
    sessions_.erase(sessions_.iterator_to(s));
    // Closed first: whoever sees the live count drop also finds the close
    // counted (a placing scheduler reads `closed`).
    stats_->closed.fetch_add(1, std::memory_order_seq_cst);
    stats_->live_connections.fetch_sub(1, std::memory_order_release);
    if (resume)
        for (std::size_t i = 0; i < listeners_.size(); ++i) accept_next(i);
}

void server::drain() {
    if (draining_) return;
    draining_ = true;
    for (std::size_t i = 0; i < listeners_.size(); ++i) {
        listeners_[i].retry->cancel();
        start_burst(i);  // accepted, never read from: answered like any fresh connection
        accept_next(i);  // what the listener still holds (see accept_next)
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        connection& s = *it++;  // drain() may close and unlink s
        s.drain();
    }
}

void server::force_close() {
    draining_ = true;
    for (auto& slot : listeners_) {
        stats_->closed.fetch_add(slot.burst.size(), std::memory_order_seq_cst);
        slot.burst.clear();
    }
    while (!sessions_.empty()) sessions_.front().force_close();
}

}  // namespace m0::http::detail
