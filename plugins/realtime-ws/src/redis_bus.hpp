#pragma once
// The Redis bus: every process of every machine that names the same Redis
// server shares its channels. A thread of its own runs one subscriber and one
// publisher connection; other threads only touch two small queues under a
// mutex, so a publish never waits for the network.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "bus.hpp"
#include "redis_connection.hpp"
#include "redis_url.hpp"

namespace m0::realtime {

struct redis_bus_settings {
    redis_address address;
    std::string prefix = "m0:";                        // Redis channel = prefix + channel
    std::size_t queue_max_messages = 65536;           // publishes waiting for the bus thread
    std::chrono::milliseconds reconnect_min{100};     // the first retry; doubles per failure
    std::chrono::milliseconds reconnect_max{5000};
    std::chrono::milliseconds connect_timeout{2000};
    std::chrono::milliseconds loss_log_interval{5000};  // at most one line about lost publishes per interval
};

class redis_bus final : public bus {
public:
    explicit redis_bus(redis_bus_settings settings);
    ~redis_bus() override;

    void start(sink deliver) override;
    void stop() override;
    void publish(std::string_view channel, std::string_view data, std::optional<std::string_view> event,
                 payload_kind kind) override;
    void subscribe(std::string_view channel) override;
    void unsubscribe(std::string_view channel) override;
    void wait_listening(std::span<const std::string> channels) override;
    bus_stats stats() const override;
    std::string describe() const override { return settings_.address.display(); }

private:
    enum class link { connecting, up, down };  // the publisher, as other threads see it
    struct connection_state {
        std::optional<redis_connection> conn;
        boost::asio::steady_timer retry;
        unsigned failures = 0;     // since it was last up
        bool was_up = false;       // a later connect is a reconnect
        explicit connection_state(boost::asio::io_context& io) : retry(io) {}
    };

    // The rest runs on the bus thread.
    void take_publishes();
    void sync_subscriptions();
    void on_subscriber_up();
    void on_subscriber_replies(const std::vector<redisReply*>& replies);
    void on_publisher_up();
    void on_publisher_replies(const std::vector<redisReply*>& replies);
    void on_down(connection_state& c, const char* role, const std::string& why);
    void on_up(connection_state& c, const char* role);
    void arm_loss_log();
    void log_losses(bool final);
    void count_lost(std::uint64_t n) { lost_.fetch_add(n, std::memory_order_relaxed); }

    const redis_bus_settings settings_;
    sink deliver_;
    // Made in start(), in the serving process: an io_context made before a
    // fork would share its epoll instance with every sibling.
    std::unique_ptr<boost::asio::io_context> io_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    std::thread thread_;

    // Any thread → bus thread.
    std::mutex mutex_;
    std::vector<std::string> queue_;  // formatted PUBLISH commands
    bool publish_wake_posted_ = false;
    std::unordered_map<std::string, unsigned> refs_;  // channel (without prefix) → subscribers
    std::unordered_set<std::string> dirty_;           // channels whose count crossed zero
    bool sync_posted_ = false;
    std::unordered_set<std::string> confirmed_;  // channels Redis confirmed on the subscriber connection
    bool subscriber_up_ = false;
    std::condition_variable listening_;          // confirmed_ or subscriber_up_ changed
    std::atomic<link> publisher_link_{link::connecting};
    std::atomic<bool> started_{false};  // io_ exists; a publish before (an import-time one) is lost

    // Bus thread only (made in start()).
    std::optional<connection_state> subscriber_;
    std::optional<connection_state> publisher_;
    std::unordered_set<std::string> subscribed_;  // what the subscriber connection asked Redis for
    std::uint64_t in_flight_ = 0;                 // PUBLISH sent, reply not read yet
    std::optional<boost::asio::steady_timer> loss_timer_;
    std::uint64_t lost_logged_ = 0;
    std::string refusal_;  // the last error Redis answered a PUBLISH with, until logged
    std::chrono::steady_clock::time_point last_loss_log_{};

    std::atomic<std::uint64_t> published_{0}, delivered_{0}, lost_{0}, reconnects_{0};
};

}  // namespace m0::realtime
