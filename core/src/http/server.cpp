#include "http/server.hpp"

#include <algorithm>

namespace m0::http::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// After an accept error such as EMFILE, wait this long before the next try
// instead of spinning on a listener that stays readable.
constexpr std::chrono::milliseconds accept_retry_delay{50};
constexpr std::chrono::milliseconds max_linger{2000};
}  // namespace

server::server(worker_context& ctx, handler& h)
    : io_(*ctx.io),
      handler_(h),
      limits_(ctx.limits ? ctx.limits : &default_limits_),
      stats_(ctx.stats ? ctx.stats : &own_stats_) {
    for (listener* l : ctx.listeners) {
        listener_slot slot;
        slot.source = l;
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
    // Beyond the connection limit the listener is left alone: the kernel
    // backlog holds new clients (or another worker takes them) until a
    // connection here closes.
    if (draining_ || slot.accepting || sessions_.size() >= limits_->max_connections_per_worker) return;
    slot.accepting = true;
    slot.source->async_accept([self = shared_from_this(), i](error_code ec, asio::ip::tcp::socket socket) {
        self->on_accept(i, ec, std::move(socket));
    });
}

void server::on_accept(std::size_t i, const error_code& ec, asio::ip::tcp::socket socket) {
    auto& slot = listeners_[i];
    slot.accepting = false;
    if (ec) {
        if (ec == asio::error::operation_aborted || draining_) return;
        slot.retry->expires_after(accept_retry_delay);
        slot.retry->async_wait([self = shared_from_this(), i](const error_code& wait_ec) {
            if (!wait_ec) self->accept_next(i);
        });
        return;
    }
    if (draining_) {
        error_code ignored;
        socket.close(ignored);
        return;
    }
    stats_->accepted.fetch_add(1, std::memory_order_relaxed);
    std::make_shared<session>(shared_from_this(), std::move(socket))->start();
    accept_next(i);
}

void server::session_opened(session& s) {
    sessions_.push_back(s);
    stats_->live_connections.fetch_add(1, std::memory_order_relaxed);
}

void server::session_closed(session& s, bool resume) {
    if (!s.is_linked()) return;
    sessions_.erase(sessions_.iterator_to(s));
    stats_->live_connections.fetch_sub(1, std::memory_order_relaxed);
    if (resume)
        for (std::size_t i = 0; i < listeners_.size(); ++i) accept_next(i);
}

void server::drain() {
    if (draining_) return;
    draining_ = true;
    for (auto& slot : listeners_) slot.retry->cancel();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        session& s = *it++;  // drain() may close and unlink s
        s.drain();
    }
}

void server::force_close() {
    draining_ = true;
    while (!sessions_.empty()) sessions_.front().force_close();
}

}  // namespace m0::http::detail
