#pragma once
// One held connection on its reactor: subscribed from the executor thread
// that ran the view, attached to its exchange when the view's job completes,
// then writing every message of its channels until it ends. A WebSocket hold
// (held_websocket.cpp) also reads, and is the application's `connection`.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/steady_timer.hpp>

#include <m0/realtime.hpp>
#include <m0/reactor.hpp>
#include <m0/websocket/session.hpp>

#include "message.hpp"
#include "realtime_settings.hpp"

namespace m0::realtime {

// What every hold of a process counts (read by the stop report and the metrics).
struct hold_counters {
    std::atomic<std::uint64_t> held{0};
    std::atomic<std::uint64_t> closed{0};            // of the held, those that ended
    std::atomic<std::uint64_t> delivered{0};
    std::atomic<std::uint64_t> sse_writes{0};        // SSE writes that carried them (several per write when coalesced)
    std::atomic<std::uint64_t> dropped{0};           // drop_oldest overflow
    std::atomic<std::uint64_t> overflow_closed{0};   // close overflow
    std::atomic<std::uint64_t> ended_by_drain{0};
};

class held_connection;

// The channel registry of the hub that made a hold (realtime_module): a
// WebSocket hold's application changes its channels from any thread.
class channel_registry {
public:
    virtual void add_channel(held_connection& h, std::string_view channel) = 0;
    virtual void remove_channel(held_connection& h, std::string_view channel) = 0;

protected:
    ~channel_registry() = default;
};

class held_connection final : public pending_hold,
                              public connection,
                              public std::enable_shared_from_this<held_connection> {
public:
    // `on_end` unsubscribes; it runs once, on the reactor. `reactor` posts
    // to the hold's reactor (the application's calls on a WebSocket hold).
    held_connection(hold_options options, unsigned shard, const settings& config, hold_counters& counters,
                    std::function<void(held_connection&)> on_end, std::uint64_t id = 0,
                    std::shared_ptr<reactor_handle> reactor = nullptr, channel_registry* registry = nullptr);

    const hold_options& options() const noexcept { return options_; }
    unsigned shard() const noexcept { return shard_; }
    // The channels the hold is subscribed to, and whether it was
    // unsubscribed for good. Both under the hub's lock only.
    std::vector<std::string>& channels() noexcept { return channels_; }
    bool& unsubscribed() noexcept { return unsubscribed_; }

    // connection (WebSocket holds; any thread).
    std::uint64_t id() const noexcept override { return id_; }
    void send(std::string_view data, payload_kind kind) override;
    void subscribe(std::string_view channel) override;
    void unsubscribe(std::string_view channel) override;
    void close(std::uint16_t code, std::string_view reason) override;
    void resume_reading() override;
    // How a message to this hold becomes a frame (compressed when the
    // deployment allows permessage-deflate).
    ws_format frame_format(payload_kind kind) const noexcept;

    // The rest runs on the hold's reactor.
    // Queues `m` and writes what the outbox holds.
    void deliver(const std::shared_ptr<const message>& m);
    // Queues `m` without writing it, so that the messages of one fan-out
    // pass leave in one write (flush_queued). True the first time since the
    // last flush on an attached hold: the caller then owes it one
    // flush_queued() call.
    bool queue(const std::shared_ptr<const message>& m);
    void flush_queued();
    void attach(http::exchange_ptr ex, std::vector<http::response_header> headers);
    void cancel() { finish(); }
    // The reactor's loop ended: let go of the exchange and the timer while
    // the io_context still exists.
    void release() noexcept;

private:
    // The bytes `m` takes in this hold's outbox: what it will write.
    std::size_t cost(const message& m) const noexcept;
    bool over_bound(const message& m) const noexcept;
    // The outbox bound and overflow policy; true when `m` was queued.
    bool admit(const std::shared_ptr<const message>& m);
    void start_sse(std::vector<http::response_header> headers);
    void start_poll(std::vector<http::response_header> headers);
    void start_ws(std::vector<http::response_header> headers);
    void on_inbound(websocket::message m);
    void on_ws_closed(std::uint16_t code);
    void send_frame(const message& m);
    void pump();
    void arm_heartbeat();
    void end_stream();
    void finish();

    const hold_options options_;
    const unsigned shard_;
    const settings& config_;
    hold_counters& counters_;
    std::function<void(held_connection&)> on_end_;
    const std::uint64_t id_;
    const std::shared_ptr<reactor_handle> reactor_;
    channel_registry* const registry_;
    std::vector<std::string> channels_;  // under the hub's lock
    bool unsubscribed_ = false;          // under the hub's lock

    http::exchange_ptr ex_;
    std::vector<http::response_header> headers_;
    std::deque<std::shared_ptr<const message>> outbox_;
    std::size_t outbox_bytes_ = 0;
    // What one write hands the engine (reused: no allocation per write).
    std::vector<std::shared_ptr<const std::string>> batch_;
    std::optional<boost::asio::steady_timer> timer_;  // SSE heartbeat, long-poll timeout
    // WebSocket: the connection after 101 (ex_ is then null).
    std::shared_ptr<http::byte_stream> stream_;
    std::shared_ptr<websocket::session> session_;
    std::shared_ptr<inbound_handler> inbound_;
    std::uint16_t close_code_ = websocket::close_code::going_away;  // how the WebSocket ended
    bool overflowed_ = false;
    bool waiting_room_ = false;
    bool flush_owed_ = false;  // queue() returned true; flush_queued() not run yet
    bool ended_ = false;
};

}  // namespace m0::realtime
