#include "held_connection.hpp"

#include <string_view>

#include <boost/asio/error.hpp>

namespace m0::realtime {
namespace {

// Messages are handed to the connection's write buffer while it holds less
// than this; the rest waits in the outbox, where the limits apply.
constexpr std::size_t write_buffer_room = 64 * 1024;

// The view's headers that the hold's own answer replaces.
bool owned_by_hold(std::string_view name) {
    return http::ascii_iequals(name, "content-type") || http::ascii_iequals(name, "content-length") ||
           http::ascii_iequals(name, "cache-control");
}

}  // namespace

held_connection::held_connection(hold_options options, unsigned shard, const settings& config,
                                 hold_counters& counters, std::function<void(held_connection&)> on_end,
                                 std::uint64_t id, std::shared_ptr<reactor_handle> reactor,
                                 channel_registry* registry)
    : options_(std::move(options)), shard_(shard), config_(config), counters_(counters), on_end_(std::move(on_end)),
      id_(id), reactor_(std::move(reactor)), registry_(registry), channels_(options_.channels),
      inbound_(options_.inbound) {}

std::size_t held_connection::cost(const message& m) const noexcept {
    switch (options_.mode) {
    case hold_mode::sse: return m.sse->size();
    case hold_mode::poll: return m.data->size();
    case hold_mode::ws: return m.ws->plain_frame()->size();
    }
    return 0;
}

bool held_connection::over_bound(const message& m) const noexcept {
    return outbox_.size() + 1 > config_.outbox_max_messages || outbox_bytes_ + cost(m) > config_.outbox_max_bytes;
}

bool held_connection::admit(const std::shared_ptr<const message>& m) {
    if (ended_ || overflowed_) return false;
    // Messages queued for a later flush are not the client's backlog while
    // the write buffer has room: write them before judging the bound, so a
    // burst to a reader that keeps up never overflows.
    if (over_bound(*m) && (ex_ || session_)) {
        pump();
        if (ended_) return false;
    }
    if (over_bound(*m)) {
        if (config_.overflow == overflow_policy::close) {
            counters_.overflow_closed.fetch_add(1, std::memory_order_relaxed);
            overflowed_ = true;
            outbox_.clear();
            outbox_bytes_ = 0;
            if (ex_ || session_) end_stream();
            return false;
        }
        while (!outbox_.empty() && over_bound(*m)) {
            outbox_bytes_ -= cost(*outbox_.front());
            outbox_.pop_front();
            counters_.dropped.fetch_add(1, std::memory_order_relaxed);
        }
        if (outbox_bytes_ + cost(*m) > config_.outbox_max_bytes) {  // larger than the whole outbox
            counters_.dropped.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
    }
    outbox_.push_back(m);
    outbox_bytes_ += cost(*m);
    return true;
}

void held_connection::deliver(const std::shared_ptr<const message>& m) {
    if (admit(m) && (ex_ || session_)) pump();
}

bool held_connection::queue(const std::shared_ptr<const message>& m) {
    if (!admit(m) || (!ex_ && !session_) || flush_owed_) return false;
    flush_owed_ = true;
    return true;
}

void held_connection::flush_queued() {
    flush_owed_ = false;
    pump();
}

void held_connection::attach(http::exchange_ptr ex, std::vector<http::response_header> headers) {
    if (ended_) return;
    ex_ = std::move(ex);
    std::erase_if(headers, [](const http::response_header& h) { return owned_by_hold(h.name); });
    counters_.held.fetch_add(1, std::memory_order_relaxed);
    if (options_.mode == hold_mode::ws) {
        // The session watches the connection itself (drain, a peer gone).
        start_ws(std::move(headers));
        return;
    }
    auto weak = weak_from_this();
    ex_->on_client_gone([weak] {
        if (auto self = weak.lock()) self->finish();
    });
    ex_->on_drain([weak] {
        if (auto self = weak.lock()) {
            if (self->ended_) return;
            self->counters_.ended_by_drain.fetch_add(1, std::memory_order_relaxed);
            self->end_stream();
        }
    });
    if (options_.mode == hold_mode::sse)
        start_sse(std::move(headers));
    else
        start_poll(std::move(headers));
}

void held_connection::start_sse(std::vector<http::response_header> headers) {
    headers.push_back({"Content-Type", "text/event-stream"});
    headers.push_back({"Cache-Control", "no-cache"});
    ex_->begin(200, std::move(headers), std::nullopt);
    if (overflowed_) {
        end_stream();
        return;
    }
    pump();
    timer_.emplace(ex_->io());
    arm_heartbeat();
}

void held_connection::start_poll(std::vector<http::response_header> headers) {
    headers_ = std::move(headers);
    if (!outbox_.empty() || overflowed_) {
        pump();
        if (overflowed_) end_stream();
        return;
    }
    if (!options_.timeout) return;
    timer_.emplace(ex_->io());
    timer_->expires_after(*options_.timeout);
    timer_->async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (ec) return;
        if (auto self = weak.lock()) self->end_stream();
    });
}

void held_connection::pump() {
    if (ended_ || (!ex_ && !session_)) return;
    if (options_.mode == hold_mode::poll) {
        if (outbox_.empty()) return;
        auto m = std::move(outbox_.front());
        outbox_.clear();
        outbox_bytes_ = 0;
        counters_.delivered.fetch_add(1, std::memory_order_relaxed);
        ex_->begin(200, std::move(headers_), m->data->size());
        ex_->write_shared(m->data);
        ex_->end();
        finish();
        return;
    }
    if (session_) {
        while (!outbox_.empty() && stream_->pending_bytes() < write_buffer_room) {
            auto& m = outbox_.front();
            send_frame(*m);
            outbox_bytes_ -= cost(*m);
            outbox_.pop_front();
            counters_.delivered.fetch_add(1, std::memory_order_relaxed);
        }
    } else if (!outbox_.empty()) {
        // Every event that fits goes in one chunk and one write.
        std::size_t room = write_buffer_room;
        const std::size_t pending = ex_->pending_bytes();
        room = pending < room ? room - pending : 0;
        std::size_t taken = 0;
        while (!outbox_.empty() && taken < room) {
            auto& m = outbox_.front();
            taken += m->sse->size();
            outbox_bytes_ -= cost(*m);
            batch_.push_back(m->sse);
            outbox_.pop_front();
        }
        if (!batch_.empty()) {
            counters_.delivered.fetch_add(batch_.size(), std::memory_order_relaxed);
            counters_.sse_writes.fetch_add(1, std::memory_order_relaxed);
            ex_->write_shared_batch(batch_);
            batch_.clear();
        }
    }
    if (!outbox_.empty() && !waiting_room_) {
        waiting_room_ = true;
        auto room = [weak = weak_from_this()] {
            if (auto self = weak.lock()) {
                self->waiting_room_ = false;
                self->pump();
            }
        };
        if (session_)
            stream_->when_drained(write_buffer_room / 2, std::move(room));
        else
            ex_->when_drained(write_buffer_room / 2, std::move(room));
    }
}

void held_connection::arm_heartbeat() {
    timer_->expires_after(config_.sse_heartbeat);
    timer_->async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (ec) return;
        auto self = weak.lock();
        if (!self || self->ended_) return;
        // A comment line: keeps proxies from timing the stream out and shows
        // a client that is gone.
        if (self->ex_->pending_bytes() < write_buffer_room) self->ex_->write(":\n\n");
        self->arm_heartbeat();
    });
}

void held_connection::end_stream() {
    if (ended_) return;
    if (session_) {
        // Overflow: the client should come back and resynchronise. The hold
        // ends when the close handshake does.
        session_->close(websocket::close_code::try_again_later, "outbox overflow");
        return;
    }
    if (ex_) {
        if (options_.mode == hold_mode::sse) {
            // What a fan-out queued but had not written yet goes first (not
            // after an overflow: the outbox is then empty).
            pump();
            ex_->end();  // the final chunk: a clean end the client can tell from a cut
        }
        else
            ex_->respond(204, std::move(headers_), {});
    }
    finish();
}

void held_connection::finish() {
    if (ended_) return;
    ended_ = true;
    if (ex_) counters_.closed.fetch_add(1, std::memory_order_relaxed);
    if (timer_) timer_->cancel();
    outbox_.clear();
    outbox_bytes_ = 0;
    ex_.reset();
    session_.reset();
    stream_.reset();
    if (auto in = std::move(inbound_)) in->on_close(close_code_);  // after the session's close handler set it
    if (on_end_) {
        auto fn = std::move(on_end_);
        on_end_ = nullptr;
        fn(*this);
    }
}

void held_connection::release() noexcept {
    if (!ended_ && ex_) counters_.closed.fetch_add(1, std::memory_order_relaxed);
    ended_ = true;
    timer_.reset();
    outbox_.clear();
    ex_.reset();
    session_.reset();
    stream_.reset();
    inbound_.reset();
    on_end_ = nullptr;
}

}  // namespace m0::realtime
