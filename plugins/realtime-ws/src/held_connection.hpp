#pragma once
// One held connection on its reactor: subscribed from the executor thread
// that ran the view, attached to its exchange when the view's job completes,
// then writing every message of its channels until it ends.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/steady_timer.hpp>

#include <m0/realtime.hpp>

#include "message.hpp"
#include "realtime_settings.hpp"

namespace m0::realtime {

// What every hold of a process counts (read by the stop report and the metrics).
struct hold_counters {
    std::atomic<std::uint64_t> held{0};
    std::atomic<std::uint64_t> closed{0};            // of the held, those that ended
    std::atomic<std::uint64_t> delivered{0};
    std::atomic<std::uint64_t> dropped{0};           // drop_oldest overflow
    std::atomic<std::uint64_t> overflow_closed{0};   // close overflow
    std::atomic<std::uint64_t> ended_by_drain{0};
};

class held_connection final : public pending_hold, public std::enable_shared_from_this<held_connection> {
public:
    // `on_end` unsubscribes; it runs once, on the reactor.
    held_connection(hold_options options, unsigned shard, const settings& config, hold_counters& counters,
                    std::function<void(held_connection&)> on_end);

    const hold_options& options() const noexcept { return options_; }
    unsigned shard() const noexcept { return shard_; }

    // The rest runs on the hold's reactor.
    void deliver(const std::shared_ptr<const message>& m);
    void attach(http::exchange_ptr ex, std::vector<http::response_header> headers);
    void cancel() { finish(); }
    // The reactor's loop ended: let go of the exchange and the timer while
    // the io_context still exists.
    void release() noexcept;

private:
    // The bytes `m` takes in this hold's outbox: what it will write.
    std::size_t cost(const message& m) const noexcept;
    void start_sse(std::vector<http::response_header> headers);
    void start_poll(std::vector<http::response_header> headers);
    void pump();
    void arm_heartbeat();
    void end_stream();
    void finish();

    const hold_options options_;
    const unsigned shard_;
    const settings& config_;
    hold_counters& counters_;
    std::function<void(held_connection&)> on_end_;

    http::exchange_ptr ex_;
    std::vector<http::response_header> headers_;
    std::deque<std::shared_ptr<const message>> outbox_;
    std::size_t outbox_bytes_ = 0;
    std::optional<boost::asio::steady_timer> timer_;  // SSE heartbeat, long-poll timeout
    bool overflowed_ = false;
    bool waiting_room_ = false;
    bool ended_ = false;
};

}  // namespace m0::realtime
