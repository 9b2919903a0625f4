#include "realtime_module.hpp"

#include <algorithm>

#include <m0/log.hpp>
#include <m0/services.hpp>

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
                              std::optional<std::string_view> event) {
    std::vector<std::vector<std::shared_ptr<held_connection>>> per_shard;
    std::vector<std::shared_ptr<reactor_handle>> reactors;
    {
        std::lock_guard lock(mutex_);
        auto it = channels_.find(std::string(channel));
        if (it == channels_.end() || it->second.empty()) return;
        per_shard.resize(shards_.size());
        reactors.reserve(shards_.size());
        for (auto& s : shards_) reactors.push_back(s.reactor);
        for (auto& h : it->second) per_shard[h->shard()].push_back(h);
    }
    // Formatted once, outside the lock; every hold shares it.
    auto m = make_message(data, event);
    for (std::size_t i = 0; i < per_shard.size(); ++i) {
        if (per_shard[i].empty() || !reactors[i]) continue;
        reactors[i]->post([m, holds = std::move(per_shard[i])] {
            for (auto& h : holds) h->deliver(m);
        });
    }
}

std::shared_ptr<pending_hold> realtime_module::subscribe(boost::asio::io_context& reactor, hold_options options) {
    std::lock_guard lock(mutex_);
    auto s = std::find_if(shards_.begin(), shards_.end(), [&](const shard& x) { return x.io == &reactor; });
    if (s == shards_.end()) return nullptr;
    auto h = std::make_shared<held_connection>(std::move(options), static_cast<unsigned>(s - shards_.begin()),
                                               config_, counters_, [this](held_connection& c) { unsubscribe(c); });
    // Registered before the view returns: a publish from now on reaches the
    // hold's outbox even while the reactor has not attached it yet.
    for (auto& ch : h->options().channels) {
        auto& list = channels_[ch];
        if (std::find(list.begin(), list.end(), h) == list.end()) list.push_back(h);
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
    for (auto& ch : h.options().channels) {
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

void realtime_module::start_reactor(reactor_context& ctx) {
    std::lock_guard lock(mutex_);
    if (ctx.index >= shards_.size()) shards_.resize(ctx.index + 1);
    shards_[ctx.index] = shard{ctx.io, ctx.reactor};
}

void realtime_module::stop_reactor(reactor_context& ctx) {
    std::vector<std::shared_ptr<held_connection>> mine;
    {
        std::lock_guard lock(mutex_);
        if (ctx.index < shards_.size()) shards_[ctx.index] = shard{};
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

void realtime_module::report_metrics(metrics_writer& out) const {
    const auto held = counters_.held.load(std::memory_order_relaxed);
    const auto closed = counters_.closed.load(std::memory_order_relaxed);
    out.gauge("m0_realtime_holds_open", "Connections held (SSE, long-poll) now.",
              static_cast<double>(held > closed ? held - closed : 0));
    out.counter("m0_realtime_holds_total", "Connections held since the start.", static_cast<double>(held));
    out.counter("m0_realtime_messages_delivered_total", "Messages written to held connections.",
                static_cast<double>(counters_.delivered.load(std::memory_order_relaxed)));
    out.counter("m0_realtime_messages_dropped_total", "Messages dropped by outbox overflow (drop_oldest).",
                static_cast<double>(counters_.dropped.load(std::memory_order_relaxed)));
    out.counter("m0_realtime_overflow_closed_total", "Holds closed by outbox overflow (close).",
                static_cast<double>(counters_.overflow_closed.load(std::memory_order_relaxed)));
    out.counter("m0_realtime_ended_by_drain_total", "Holds the drain ended.",
                static_cast<double>(counters_.ended_by_drain.load(std::memory_order_relaxed)));
}

void realtime_module::stop_serving(serving_context&) {
    log::info("realtime: " + std::to_string(counters_.held.load()) + " holds, " +
              std::to_string(counters_.ended_by_drain.load()) + " ended by the drain, " +
              std::to_string(counters_.delivered.load()) + " messages delivered, " +
              std::to_string(counters_.dropped.load()) + " dropped and " +
              std::to_string(counters_.overflow_closed.load()) + " holds closed by outbox overflow");
}

}  // namespace m0::realtime
