#include "realtime_module.hpp"

#include <algorithm>

#include <m0/log.hpp>
#include <m0/services.hpp>
#include <m0/websocket/handshake.hpp>

namespace m0::realtime {

realtime_module::realtime_module(plugin_context& ctx) : config_(read_settings(*ctx.section)) {
    // The memory bus reaches one process: under prefork a publish would
    // miss every hold of the other processes, silently.
    if (ctx.process_count > 1)
        ctx.section->fail("bus", "bus: memory reaches one process only; server.workers > 1 needs a shared bus "
                                 "(redis://host:port/db, not built yet)");
    shards_.resize(ctx.reactor_count ? ctx.reactor_count : 1);
    ctx.services->provide<hub>(*this, "module realtime");
}

void realtime_module::publish(std::string_view channel, std::string_view data,
                              std::optional<std::string_view> event, payload_kind kind) {
    std::vector<std::vector<std::shared_ptr<held_connection>>> per_shard;
    std::vector<std::shared_ptr<reactor_handle>> reactors;
    std::optional<ws_format> ws;  // some hold of the channel is a WebSocket
    {
        std::lock_guard lock(mutex_);
        auto it = channels_.find(std::string(channel));
        if (it == channels_.end() || it->second.empty()) return;
        per_shard.resize(shards_.size());
        reactors.reserve(shards_.size());
        for (auto& s : shards_) reactors.push_back(s.reactor);
        for (auto& h : it->second) {
            per_shard[h->shard()].push_back(h);
            if (!ws && h->options().mode == hold_mode::ws) ws = h->frame_format(kind);
        }
    }
    // Formatted once, outside the lock; every hold shares it.
    auto m = make_message(data, event, ws ? &*ws : nullptr);
    for (std::size_t i = 0; i < per_shard.size(); ++i) {
        if (per_shard[i].empty() || !reactors[i]) continue;
        reactors[i]->post([m, holds = std::move(per_shard[i])] {
            for (auto& h : holds) h->deliver(m);
        });
    }
}

std::optional<std::string> realtime_module::check_websocket(const http::request& req) const {
    auto handshake = websocket::check_handshake(req, config_.websocket.handshake);
    if (handshake.accepted) return std::nullopt;
    // The refusal's body is one line saying what was wrong.
    std::string why = handshake.body;
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    return why;
}

std::shared_ptr<pending_hold> realtime_module::subscribe(boost::asio::io_context& reactor, hold_options options) {
    std::lock_guard lock(mutex_);
    auto s = std::find_if(shards_.begin(), shards_.end(), [&](const shard& x) { return x.io == &reactor; });
    if (s == shards_.end()) return nullptr;
    auto h = std::make_shared<held_connection>(std::move(options), static_cast<unsigned>(s - shards_.begin()),
                                               config_, counters_, [this](held_connection& c) { unsubscribe(c); },
                                               ++next_id_, s->reactor, static_cast<channel_registry*>(this));
    // Registered before the view returns: a publish from now on reaches the
    // hold's outbox even while the reactor has not attached it yet.
    for (auto& ch : h->channels()) {
        auto& list = channels_[ch];
        if (std::find(list.begin(), list.end(), h) == list.end()) list.push_back(h);
    }
    if (h->options().mode == hold_mode::ws) {
        std::erase_if(s->websockets, [](const auto& w) { return w.expired(); });
        s->websockets.push_back(h);
    }
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

void realtime_module::unsubscribe(held_connection& h) {
    std::vector<std::shared_ptr<held_connection>> gone;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    h.unsubscribed() = true;
    for (auto& ch : h.channels()) {
        auto it = channels_.find(ch);
        if (it == channels_.end()) continue;
        auto& list = it->second;
        for (auto i = list.begin(); i != list.end();) {
            if (i->get() == &h) {
                gone.push_back(std::move(*i));
                i = list.erase(i);
            } else {
                ++i;
            }
        }
        if (list.empty()) channels_.erase(it);
    }
}

void realtime_module::add_channel(held_connection& h, std::string_view channel) {
    std::lock_guard lock(mutex_);
    if (h.unsubscribed()) return;  // ended: it must not linger in the map
    auto& mine = h.channels();
    if (std::find(mine.begin(), mine.end(), channel) != mine.end()) return;
    mine.emplace_back(channel);
    channels_[std::string(channel)].push_back(h.shared_from_this());
}

void realtime_module::remove_channel(held_connection& h, std::string_view channel) {
    std::shared_ptr<held_connection> gone;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    auto& mine = h.channels();
    auto at = std::find(mine.begin(), mine.end(), channel);
    if (at == mine.end()) return;
    mine.erase(at);
    auto it = channels_.find(std::string(channel));
    if (it == channels_.end()) return;
    auto& list = it->second;
    auto i = std::find_if(list.begin(), list.end(), [&](const auto& x) { return x.get() == &h; });
    if (i != list.end()) {
        gone = std::move(*i);
        list.erase(i);
    }
    if (list.empty()) channels_.erase(it);
}

void realtime_module::start_reactor(reactor_context& ctx) {
    std::lock_guard lock(mutex_);
    if (ctx.index >= shards_.size()) shards_.resize(ctx.index + 1);
    shards_[ctx.index] = shard{ctx.io, ctx.reactor, {}};
}

void realtime_module::stop_reactor(reactor_context& ctx) {
    std::vector<std::shared_ptr<held_connection>> mine;
    {
        std::lock_guard lock(mutex_);
        if (ctx.index < shards_.size()) {
            for (auto& w : shards_[ctx.index].websockets)
                if (auto h = w.lock()) mine.push_back(std::move(h));
            shards_[ctx.index] = shard{};
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
            it = list.empty() ? channels_.erase(it) : std::next(it);
        }
    }
    // The loop has ended: nothing else runs on this reactor.
    for (auto& h : mine) h->release();
}

void realtime_module::stop_serving(serving_context&) {
    log::info("realtime: " + std::to_string(counters_.held.load()) + " holds, " +
              std::to_string(counters_.ended_by_drain.load()) + " ended by the drain, " +
              std::to_string(counters_.delivered.load()) + " messages delivered, " +
              std::to_string(counters_.dropped.load()) + " dropped and " +
              std::to_string(counters_.overflow_closed.load()) + " holds closed by outbox overflow");
}

}  // namespace m0::realtime
