#pragma once
// The `realtime` module: provides the hub service (m0/realtime.hpp) over a
// bus (memory or Redis). A batch of messages from the bus looks up each
// channel's holds once, groups them by reactor and hands each reactor's share
// to its mailbox: one post per reactor per batch, every hold of a message
// sharing its one formatted buffer (and WebSocket frame). On the reactor a
// mailbox pass first queues every message in its holds' outboxes, then
// writes each hold once for all of them (a burst costs one write per
// connection, not one per message), in slices that let the reactor's other
// work (the requests that publish) run in between.
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <m0/module.hpp>
#include <m0/plugin.hpp>
#include <m0/realtime.hpp>

#include "bus.hpp"
#include "held_connection.hpp"
#include "realtime_settings.hpp"

namespace m0::realtime {

class realtime_module final : public module, public hub, private channel_registry {
public:
    // Reads the section and registers the hub; throws config_error.
    explicit realtime_module(plugin_context& ctx);

    void publish(std::string_view channel, std::string_view data, std::optional<std::string_view> event,
                 payload_kind kind) override;
    std::optional<std::string> check_websocket(const http::request& req) const override;
    std::shared_ptr<pending_hold> subscribe(boost::asio::io_context& reactor, hold_options options) override;
    void attach(std::shared_ptr<pending_hold> hold, http::exchange_ptr ex,
                std::vector<http::response_header> headers) override;
    void cancel(std::shared_ptr<pending_hold> hold) override;
    bus_stats stats() const override { return bus_->stats(); }

    void start_serving(serving_context& ctx) override;
    void start_reactor(reactor_context& ctx) override;
    void stop_reactor(reactor_context& ctx) override;
    void stop_serving(serving_context& ctx) override;
    void report_metrics(metrics_writer& out) const override;

private:
    // One message for some holds of one reactor.
    struct delivery {
        std::shared_ptr<const message> msg;
        std::vector<std::shared_ptr<held_connection>> holds;
    };
    // What waits for a reactor: filled by any thread, emptied by the one
    // task posted to the reactor while it is not empty.
    struct mailbox {
        std::mutex mutex;
        std::vector<delivery> pending;
        bool posted = false;
        // Reactor thread only: holds with queued messages, written in
        // slices from `flushed` on; a slice task is posted while some wait.
        std::vector<std::shared_ptr<held_connection>> to_flush;
        std::size_t flushed = 0;
        bool flush_posted = false;
    };
    struct shard {
        boost::asio::io_context* io = nullptr;
        std::shared_ptr<reactor_handle> reactor;
        // Never moves (the module outlives every reactor): tasks point at it.
        std::unique_ptr<mailbox> box = std::make_unique<mailbox>();
        // WebSocket holds, which may have no channel: released with the rest.
        std::vector<std::weak_ptr<held_connection>> websockets;
    };

    // The bus's sink: fans a batch out to this process's holds.
    void deliver(std::span<const bus_message> batch);
    void post_to_shard(mailbox& box, const std::shared_ptr<reactor_handle>& reactor, std::vector<delivery> items);
    static void run_mailbox(mailbox& box, const std::shared_ptr<reactor_handle>& reactor);
    static void flush_slice(mailbox& box, const std::shared_ptr<reactor_handle>& reactor);
    void unsubscribe(held_connection& h);
    // Drops `h` from `channel`'s list; the bus forgets a channel left empty.
    void remove_from_channel(const std::string& channel, const held_connection* h,
                             std::vector<std::shared_ptr<held_connection>>& gone);
    void add_channel(held_connection& h, std::string_view channel) override;
    void remove_channel(held_connection& h, std::string_view channel) override;

    const settings config_;
    std::unique_ptr<bus> bus_;
    hold_counters counters_;
    std::atomic<std::uint64_t> reactor_posts_{0};  // mailbox tasks posted (stop report: batching)
    std::mutex mutex_;                              // guards shards_ (but their mailboxes) and channels_
    std::vector<shard> shards_;
    std::uint64_t next_id_ = 0;
    std::unordered_map<std::string, std::vector<std::shared_ptr<held_connection>>> channels_;
};

}  // namespace m0::realtime
