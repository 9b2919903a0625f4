#include "realtime_module.hpp"

#include <algorithm>
#include <utility>

#include <m0/log.hpp>
#include <m0/services.hpp>
#include <m0/websocket/handshake.hpp>

#include "memory_bus.hpp"
#include "redis_bus.hpp"

namespace m0::realtime {
namespace {

// Holds written per reactor task during a fan-out: a write to a socket
// costs a few microseconds, so a slice keeps the reactor away from its
// other connections for about a millisecond.
constexpr std::size_t flush_slice_holds = 256;

std::unique_ptr<bus> make_bus(const settings& s) {
    if (!s.redis) return std::make_unique<memory_bus>();
    return std::make_unique<redis_bus>(redis_bus_settings{.address = *s.redis,
                                                          .prefix = s.bus_prefix,
                                                          .queue_max_messages = s.redis_queue_max_messages,
                                                          .reconnect_max = s.redis_reconnect_max,
                                                          .connect_timeout = s.redis_connect_timeout});
}

}  // namespace

realtime_module::realtime_module(plugin_context& ctx) : config_(read_settings(*ctx.section)), bus_(make_bus(config_)) {
    // The memory bus reaches one process: under prefork a publish would
    // miss every hold of the other processes, silently.
    if (ctx.process_count > 1 && !config_.redis)
        ctx.section->fail("bus", "bus: memory reaches one process only; server.workers > 1 needs a shared bus: "
                                 "redis://host:port/db or unix:///path/to/redis.sock");
    shards_.resize(ctx.reactor_count ? ctx.reactor_count : 1);
    ctx.services->provide<hub>(*this, "module realtime");
}

void realtime_module::publish(std::string_view channel, std::string_view data,
                              std::optional<std::string_view> event, payload_kind kind) {
    bus_->publish(channel, data, event, kind);
}

std::optional<std::string> realtime_module::check_websocket(const http::request& req) const {
    auto handshake = websocket::check_handshake(req, config_.websocket.handshake);
    if (handshake.accepted) return std::nullopt;
    // The refusal's body is one line saying what was wrong.
    std::string why = handshake.body;
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    return why;
}

void realtime_module::deliver(std::span<const bus_message> batch) {
    // Per reactor: (message index, its holds there), in the batch's order.
    std::vector<std::vector<std::pair<std::size_t, std::vector<std::shared_ptr<held_connection>>>>> per_shard;
    std::vector<std::pair<std::shared_ptr<reactor_handle>, mailbox*>> reactors;
    // Per message: the WebSocket frame format when some hold is a WebSocket.
    std::vector<std::optional<ws_format>> ws(batch.size());
    {
        std::lock_guard lock(mutex_);
        per_shard.resize(shards_.size());
        for (std::size_t i = 0; i < batch.size(); ++i) {
            auto it = channels_.find(std::string(batch[i].channel));
            if (it == channels_.end()) continue;
            for (auto& h : it->second) {
                if (!ws[i] && h->options().mode == hold_mode::ws) ws[i] = h->frame_format(batch[i].kind);
                auto& mine = per_shard[h->shard()];
                if (mine.empty() || mine.back().first != i) mine.emplace_back(i, std::vector<std::shared_ptr<held_connection>>{});
                mine.back().second.push_back(h);
            }
        }
        reactors.reserve(shards_.size());
        for (auto& s : shards_) reactors.emplace_back(s.reactor, s.box.get());
    }
    // Each message formatted once, outside the lock; every hold shares it.
    std::vector<std::shared_ptr<const message>> formatted(batch.size());
    for (std::size_t s = 0; s < per_shard.size(); ++s) {
        if (per_shard[s].empty() || !reactors[s].first) continue;
        std::vector<delivery> items;
        items.reserve(per_shard[s].size());
        for (auto& [i, holds] : per_shard[s]) {
            if (!formatted[i]) formatted[i] = make_message(batch[i].data, batch[i].event, ws[i] ? &*ws[i] : nullptr);
            items.push_back({formatted[i], std::move(holds)});
        }
        post_to_shard(*reactors[s].second, reactors[s].first, std::move(items));
    }
}

void realtime_module::post_to_shard(mailbox& box, const std::shared_ptr<reactor_handle>& reactor,
                                    std::vector<delivery> items) {
    {
        std::lock_guard lock(box.mutex);
        if (box.pending.empty()) {
            box.pending = std::move(items);
        } else {
            box.pending.insert(box.pending.end(), std::make_move_iterator(items.begin()),
                               std::make_move_iterator(items.end()));
        }
        // A task already on its way takes these too: a burst of publishes
        // costs the reactor one post, not one per message.
        if (std::exchange(box.posted, true)) return;
    }
    reactor_posts_.fetch_add(1, std::memory_order_relaxed);
    if (!reactor->post([&box, reactor] { run_mailbox(box, reactor); })) {
        std::lock_guard lock(box.mutex);  // the reactor has ended: nobody will take them
        box.pending.clear();
        box.posted = false;
    }
}

void realtime_module::run_mailbox(mailbox& box, const std::shared_ptr<reactor_handle>& reactor) {
    std::vector<delivery> items;
    {
        std::lock_guard lock(box.mutex);
        items.swap(box.pending);
        box.posted = false;
    }
    // Queued first, written after: a hold that gets several messages of
    // this pass writes them together.
    for (auto& d : items)
        for (auto& h : d.holds)
            if (h->queue(d.msg)) box.to_flush.push_back(std::move(h));
    // A slice task already posted takes the new ones in its turn.
    if (!box.flush_posted) flush_slice(box, reactor);
}

void realtime_module::flush_slice(mailbox& box, const std::shared_ptr<reactor_handle>& reactor) {
    box.flush_posted = false;
    const std::size_t end = std::min(box.to_flush.size(), box.flushed + flush_slice_holds);
    for (; box.flushed < end; ++box.flushed) std::exchange(box.to_flush[box.flushed], nullptr)->flush_queued();
    if (box.flushed == box.to_flush.size()) {
        box.to_flush.clear();
        box.flushed = 0;
        return;
    }
    // The rest after the reactor's other ready work: a request that arrived
    // meanwhile (a publish) waits for one slice, not for the whole fan-out.
    box.flush_posted = true;
    if (!reactor->post([&box, reactor] { flush_slice(box, reactor); })) {
        box.to_flush.clear();  // the reactor has ended: stop_reactor releases the holds
        box.flushed = 0;
        box.flush_posted = false;
    }
}

std::shared_ptr<pending_hold> realtime_module::subscribe(boost::asio::io_context& reactor, hold_options options) {
    std::shared_ptr<held_connection> h;
    std::vector<std::string> channels;  // a copy: a WebSocket's list changes under the lock
    {
        std::lock_guard lock(mutex_);
        auto s = std::find_if(shards_.begin(), shards_.end(), [&](const shard& x) { return x.io == &reactor; });
        if (s == shards_.end()) return nullptr;
        h = std::make_shared<held_connection>(std::move(options), static_cast<unsigned>(s - shards_.begin()), config_,
                                              counters_, [this](held_connection& c) { unsubscribe(c); }, ++next_id_,
                                              s->reactor, static_cast<channel_registry*>(this));
        // Registered before the view returns: a publish from now on reaches
        // the hold's outbox even while the reactor has not attached it yet.
        for (auto& ch : h->channels()) {
            auto& list = channels_[ch];
            if (list.empty()) bus_->subscribe(ch);
            if (std::find(list.begin(), list.end(), h) == list.end()) list.push_back(h);
        }
        if (h->options().mode == hold_mode::ws) {
            std::erase_if(s->websockets, [](const auto& w) { return w.expired(); });
            s->websockets.push_back(h);
        }
        channels = h->channels();
    }
    // The same promise across processes: the view returns once the bus
    // (Redis) brings this process the hold's channels.
    bus_->wait_listening(channels);
    return h;
}

void realtime_module::attach(std::shared_ptr<pending_hold> hold, http::exchange_ptr ex,
                             std::vector<http::response_header> headers) {
    auto h = std::static_pointer_cast<held_connection>(std::move(hold));
    h->attach(std::move(ex), std::move(headers));
}

void realtime_module::cancel(std::shared_ptr<pending_hold> hold) {
    std::static_pointer_cast<held_connection>(std::move(hold))->cancel();
}

void realtime_module::remove_from_channel(const std::string& channel, const held_connection* h,
                                          std::vector<std::shared_ptr<held_connection>>& gone) {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    auto& list = it->second;
    for (auto i = list.begin(); i != list.end();) {
        if (i->get() == h) {
            gone.push_back(std::move(*i));
            i = list.erase(i);
        } else {
            ++i;
        }
    }
    if (list.empty()) {
        bus_->unsubscribe(channel);
        channels_.erase(it);
    }
}

void realtime_module::unsubscribe(held_connection& h) {
    std::vector<std::shared_ptr<held_connection>> gone;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    h.unsubscribed() = true;
    for (auto& ch : h.channels()) remove_from_channel(ch, &h, gone);
}

void realtime_module::add_channel(held_connection& h, std::string_view channel) {
    {
        std::lock_guard lock(mutex_);
        if (h.unsubscribed()) return;  // ended: it must not linger in the map
        auto& mine = h.channels();
        if (std::find(mine.begin(), mine.end(), channel) != mine.end()) return;
        mine.emplace_back(channel);
        auto& list = channels_[std::string(channel)];
        if (list.empty()) bus_->subscribe(channel);
        list.push_back(h.shared_from_this());
    }
    // As for a hold: a publish from anywhere after subscribe() returns arrives.
    std::string name(channel);
    bus_->wait_listening(std::span<const std::string>(&name, 1));
}

void realtime_module::remove_channel(held_connection& h, std::string_view channel) {
    std::vector<std::shared_ptr<held_connection>> gone;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    auto& mine = h.channels();
    auto at = std::find(mine.begin(), mine.end(), channel);
    if (at == mine.end()) return;
    mine.erase(at);
    remove_from_channel(std::string(channel), &h, gone);
}

void realtime_module::start_serving(serving_context&) {
    // Here, in the serving process: the Redis bus starts a thread, which a
    // fork would not copy.
    bus_->start([this](std::span<const bus_message> batch) { deliver(batch); });
}

void realtime_module::start_reactor(reactor_context& ctx) {
    std::lock_guard lock(mutex_);
    if (ctx.index >= shards_.size()) shards_.resize(ctx.index + 1);
    shards_[ctx.index].io = ctx.io;
    shards_[ctx.index].reactor = ctx.reactor;
}

void realtime_module::stop_reactor(reactor_context& ctx) {
    std::vector<std::shared_ptr<held_connection>> mine;
    mailbox* box = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (ctx.index < shards_.size()) {
            for (auto& w : shards_[ctx.index].websockets)
                if (auto h = w.lock()) mine.push_back(std::move(h));
            shards_[ctx.index].websockets.clear();
            box = shards_[ctx.index].box.get();
            shards_[ctx.index].io = nullptr;
            shards_[ctx.index].reactor.reset();
        }
        for (auto it = channels_.begin(); it != channels_.end();) {
            auto& list = it->second;
            for (auto i = list.begin(); i != list.end();) {
                if ((*i)->shard() == ctx.index) {
                    mine.push_back(std::move(*i));
                    i = list.erase(i);
                } else {
                    ++i;
                }
            }
            if (list.empty()) {
                bus_->unsubscribe(it->first);
                it = channels_.erase(it);
            } else {
                ++it;
            }
        }
    }
    std::vector<std::shared_ptr<held_connection>> unflushed;  // released below with the rest
    if (box) {
        // Deliveries the loop did not run: their holds are released below.
        std::lock_guard lock(box->mutex);
        box->pending.clear();
        unflushed.swap(box->to_flush);
        box->flushed = 0;
        box->flush_posted = false;
    }
    // The loop has ended: nothing else runs on this reactor.
    for (auto& h : mine) h->release();
}

void realtime_module::report_metrics(metrics_writer& out) const {
    const auto held = counters_.held.load(std::memory_order_relaxed);
    const auto closed = counters_.closed.load(std::memory_order_relaxed);
    out.gauge("m0_realtime_holds_open", "Connections held (SSE, long-poll, WebSocket) now.",
              static_cast<double>(held > closed ? held - closed : 0));
    out.counter("m0_realtime_holds_total", "Connections held since the start.", static_cast<double>(held));
    out.counter("m0_realtime_messages_delivered_total", "Messages written to held connections.",
                static_cast<double>(counters_.delivered.load(std::memory_order_relaxed)));
    out.counter("m0_realtime_sse_writes_total",
                "Writes that carried SSE messages: fewer than the messages when a fan-out coalesced them.",
                static_cast<double>(counters_.sse_writes.load(std::memory_order_relaxed)));
    out.counter("m0_realtime_messages_dropped_total", "Messages dropped by outbox overflow (drop_oldest).",
                static_cast<double>(counters_.dropped.load(std::memory_order_relaxed)));
    out.counter("m0_realtime_overflow_closed_total", "Holds closed by outbox overflow (close).",
                static_cast<double>(counters_.overflow_closed.load(std::memory_order_relaxed)));
    out.counter("m0_realtime_ended_by_drain_total", "Holds the drain ended.",
                static_cast<double>(counters_.ended_by_drain.load(std::memory_order_relaxed)));
    const auto bus = bus_->stats();
    out.counter("m0_realtime_bus_published_total", "Publishes the bus took (Redis: confirmed by the server).",
                static_cast<double>(bus.published));
    out.counter("m0_realtime_bus_delivered_total", "Messages the bus brought to this process.",
                static_cast<double>(bus.delivered));
    out.counter("m0_realtime_bus_lost_total", "Publishes lost: bus unreachable, queue full, unconfirmed at a disconnect.",
                static_cast<double>(bus.lost));
    out.counter("m0_realtime_bus_reconnects_total", "Connections to Redis made again after a loss.",
                static_cast<double>(bus.reconnects));
}

void realtime_module::stop_serving(serving_context&) {
    bus_->stop();
    log::info("realtime: " + std::to_string(counters_.held.load()) + " holds, " +
              std::to_string(counters_.ended_by_drain.load()) + " ended by the drain, " +
              std::to_string(counters_.delivered.load()) + " messages delivered (SSE: " +
              std::to_string(counters_.sse_writes.load()) + " writes), " +
              std::to_string(counters_.dropped.load()) + " dropped and " +
              std::to_string(counters_.overflow_closed.load()) + " holds closed by outbox overflow");
    auto b = bus_->stats();
    log::info("realtime: bus " + bus_->describe() + ": " + std::to_string(b.published) + " published, " +
              std::to_string(b.delivered) + " delivered, " + std::to_string(b.lost) + " lost, " +
              std::to_string(b.reconnects) + " reconnects; " + std::to_string(reactor_posts_.load()) +
              " fan-out posts to reactors");
}

}  // namespace m0::realtime
