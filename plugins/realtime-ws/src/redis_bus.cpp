#include "redis_bus.hpp"

#include <algorithm>

#include <hiredis/hiredis.h>

#include <boost/asio/post.hpp>

#include <m0/log.hpp>

#include "bus_payload.hpp"

namespace m0::realtime {

namespace asio = boost::asio;

namespace {

std::string_view reply_text(const redisReply* r) {
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR)
               ? std::string_view(r->str, r->len)
               : std::string_view{};
}

}  // namespace

redis_bus::redis_bus(redis_bus_settings settings) : settings_(std::move(settings)) {}

redis_bus::~redis_bus() { stop(); }

void redis_bus::start(sink deliver) {
    deliver_ = std::move(deliver);
    io_ = std::make_unique<asio::io_context>(1);
    work_.emplace(io_->get_executor());
    subscriber_.emplace(*io_);
    publisher_.emplace(*io_);
    loss_timer_.emplace(*io_);
    subscriber_->conn.emplace(*io_, settings_.address, settings_.connect_timeout,
                             redis_connection::callbacks{
                                 .up = [this] { on_subscriber_up(); },
                                 .replies = [this](const std::vector<redisReply*>& r) { on_subscriber_replies(r); },
                                 .down = [this](const std::string& why) { on_down(*subscriber_, "subscriber", why); },
                             });
    publisher_->conn.emplace(*io_, settings_.address, settings_.connect_timeout,
                            redis_connection::callbacks{
                                .up = [this] { on_publisher_up(); },
                                .replies = [this](const std::vector<redisReply*>& r) { on_publisher_replies(r); },
                                .down = [this](const std::string& why) { on_down(*publisher_, "publisher", why); },
                            });
    asio::post(*io_, [this] {
        subscriber_->conn->connect();
        publisher_->conn->connect();
        arm_loss_log();
    });
    thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "m0-redis-bus");
        io_->run();
    });
    started_.store(true, std::memory_order_release);
    log::info("realtime: bus " + describe() + ", channels prefixed '" + settings_.prefix + "'");
}

void redis_bus::stop() {
    if (!thread_.joinable()) return;
    // A publish from a thread that outlives serving is counted as lost.
    started_.store(false, std::memory_order_release);
    asio::post(*io_, [this] {
        // What is still queued never reaches Redis.
        {
            std::lock_guard lock(mutex_);
            count_lost(queue_.size());
            queue_.clear();
        }
        count_lost(in_flight_);
        in_flight_ = 0;
        {
            std::lock_guard lock(mutex_);
            subscriber_up_ = false;
        }
        listening_.notify_all();
        subscriber_->conn->close();
        publisher_->conn->close();
        subscriber_->retry.cancel();
        publisher_->retry.cancel();
        loss_timer_->cancel();
        log_losses(true);
        work_.reset();
        // A handler that had already completed (a loss tick, a retry) would
        // arm its timer again: leave now; what is left is destroyed unrun.
        io_->stop();
    });
    thread_.join();
}

void redis_bus::publish(std::string_view channel, std::string_view data, std::optional<std::string_view> event,
                        payload_kind kind) {
    if (!started_.load(std::memory_order_acquire) || publisher_link_.load(std::memory_order_acquire) == link::down) {
        // Redis is unreachable: dropped now rather than delivered late.
        count_lost(1);
        return;
    }
    std::string key;
    key.reserve(settings_.prefix.size() + channel.size());
    key += settings_.prefix;
    key += channel;
    std::string command = format_command({"PUBLISH", key, encode_bus_payload(data, event, kind)});
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        if (queue_.size() >= settings_.queue_max_messages) {
            count_lost(1);
            return;
        }
        queue_.push_back(std::move(command));
        wake = !std::exchange(publish_wake_posted_, true);
    }
    // One wake per burst: the bus thread takes every queued publish at once.
    if (wake) asio::post(*io_, [this] { take_publishes(); });
}

void redis_bus::subscribe(std::string_view channel) {
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        std::string ch(channel);
        if (++refs_[ch] != 1) return;
        dirty_.insert(std::move(ch));
        wake = started_.load(std::memory_order_acquire) && !std::exchange(sync_posted_, true);
    }
    // Before start() there is nothing to wake: the first connection
    // subscribes to every channel counted.
    if (wake) asio::post(*io_, [this] { sync_subscriptions(); });
}

void redis_bus::unsubscribe(std::string_view channel) {
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        auto it = refs_.find(std::string(channel));
        if (it == refs_.end() || --it->second != 0) return;
        dirty_.insert(it->first);
        refs_.erase(it);
        wake = started_.load(std::memory_order_acquire) && !std::exchange(sync_posted_, true);
    }
    // Before start() there is nothing to wake: the first connection
    // subscribes to every channel counted.
    if (wake) asio::post(*io_, [this] { sync_subscriptions(); });
}

void redis_bus::wait_listening(std::span<const std::string> channels) {
    auto deadline = std::chrono::steady_clock::now() + settings_.connect_timeout;
    std::unique_lock lock(mutex_);
    // Redis down: nothing to wait for; the subscription follows on reconnect.
    listening_.wait_until(lock, deadline, [&] {
        return !subscriber_up_ ||
               std::all_of(channels.begin(), channels.end(), [&](const std::string& ch) { return confirmed_.contains(ch); });
    });
}

bus_stats redis_bus::stats() const {
    return {.published = published_.load(std::memory_order_relaxed),
            .delivered = delivered_.load(std::memory_order_relaxed),
            .lost = lost_.load(std::memory_order_relaxed),
            .reconnects = reconnects_.load(std::memory_order_relaxed)};
}

void redis_bus::take_publishes() {
    std::vector<std::string> batch;
    {
        std::lock_guard lock(mutex_);
        batch.swap(queue_);
        publish_wake_posted_ = false;
    }
    if (batch.empty()) return;
    auto state = publisher_link_.load(std::memory_order_relaxed);
    if (state == link::down) {
        count_lost(batch.size());
        return;
    }
    if (state == link::connecting) {
        // The first connection is not made yet: keep them for it (bounded by
        // the queue's limit, which counts them again).
        std::lock_guard lock(mutex_);
        queue_.insert(queue_.begin(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
        return;
    }
    std::string out;
    std::size_t size = 0;
    for (auto& c : batch) size += c.size();
    out.reserve(size);
    for (auto& c : batch) out += c;
    in_flight_ += batch.size();
    publisher_->conn->send(out);
}

void redis_bus::sync_subscriptions() {
    std::vector<std::string> add, remove;
    {
        std::lock_guard lock(mutex_);
        sync_posted_ = false;
        if (!subscriber_->conn->up()) return;  // on_subscriber_up subscribes to all
        for (auto& ch : dirty_) {
            bool want = refs_.contains(ch);
            bool have = subscribed_.contains(ch);
            if (want && !have) add.push_back(ch);
            if (!want && have) remove.push_back(ch);
        }
        dirty_.clear();
        // No longer listening from now on, not from the reply: a subscribe
        // that follows must wait for its own confirmation.
        for (auto& ch : remove) confirmed_.erase(ch);
    }
    auto command = [this](std::string_view verb, const std::vector<std::string>& channels) {
        std::vector<std::string> keys;
        keys.reserve(channels.size());
        for (auto& ch : channels) keys.push_back(settings_.prefix + ch);
        std::vector<std::string_view> args{verb};
        args.insert(args.end(), keys.begin(), keys.end());
        return format_command(args);
    };
    if (!add.empty()) {
        for (auto& ch : add) subscribed_.insert(ch);
        subscriber_->conn->send(command("SUBSCRIBE", add));
    }
    if (!remove.empty()) {
        for (auto& ch : remove) subscribed_.erase(ch);
        subscriber_->conn->send(command("UNSUBSCRIBE", remove));
    }
}

void redis_bus::on_subscriber_up() {
    on_up(*subscriber_, "subscriber");
    {
        std::lock_guard lock(mutex_);
        subscriber_up_ = true;
    }
    // A new connection has no subscriptions: ask again for every channel held.
    subscribed_.clear();
    {
        std::lock_guard lock(mutex_);
        for (auto& [ch, n] : refs_) dirty_.insert(ch);
    }
    sync_subscriptions();
}

void redis_bus::on_subscriber_replies(const std::vector<redisReply*>& replies) {
    std::vector<bus_message> batch;
    batch.reserve(replies.size());
    bool confirmations = false;
    for (const redisReply* r : replies) {
        if (r->type == REDIS_REPLY_ERROR) {
            log::warning("realtime: redis subscriber: " + std::string(reply_text(r)));
            continue;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) continue;
        std::string_view kind = reply_text(r->element[0]);
        std::string_view key = reply_text(r->element[1]);
        if (!key.starts_with(settings_.prefix)) continue;
        std::string_view channel = key.substr(settings_.prefix.size());
        if (kind == "message") {
            auto payload = decode_bus_payload(reply_text(r->element[2]));
            batch.push_back({channel, payload.data, payload.event, payload.kind});
        } else if (kind == "subscribe" || kind == "unsubscribe") {
            std::lock_guard lock(mutex_);
            if (kind == "subscribe")
                confirmed_.insert(std::string(channel));
            else
                confirmed_.erase(std::string(channel));
            confirmations = true;
        }
    }
    if (confirmations) listening_.notify_all();
    if (batch.empty()) return;
    delivered_.fetch_add(batch.size(), std::memory_order_relaxed);
    // One call for everything this read brought: the hub posts once per
    // reactor for the whole batch.
    if (deliver_) deliver_(batch);
}

void redis_bus::on_publisher_up() {
    on_up(*publisher_, "publisher");
    publisher_link_.store(link::up, std::memory_order_release);
    take_publishes();
}

void redis_bus::on_publisher_replies(const std::vector<redisReply*>& replies) {
    for (const redisReply* r : replies) {
        if (in_flight_) --in_flight_;
        if (r->type == REDIS_REPLY_ERROR) {
            // Said with the next line about losses, not once per publish.
            count_lost(1);
            refusal_ = std::string(reply_text(r));
        } else {
            published_.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

void redis_bus::on_up(connection_state& c, const char* role) {
    if (c.was_up) reconnects_.fetch_add(1, std::memory_order_relaxed);
    log::info(std::string("realtime: redis ") + role + (c.was_up ? " reconnected to " : " connected to ") + describe());
    c.was_up = true;
    c.failures = 0;
}

void redis_bus::on_down(connection_state& c, const char* role, const std::string& why) {
    if (&c == &*publisher_) {
        publisher_link_.store(link::down, std::memory_order_release);
        // Sent but not confirmed: Redis may or may not have passed them on.
        count_lost(in_flight_);
        in_flight_ = 0;
    } else {
        subscribed_.clear();
        {
            std::lock_guard lock(mutex_);
            subscriber_up_ = false;
            confirmed_.clear();
        }
        listening_.notify_all();
    }
    if (c.failures == 0)
        log::warning(std::string("realtime: redis ") + role + ": " + (c.was_up ? "lost " : "no ") + "connection to " +
                     describe() + ": " + why + "; retrying");
    auto delay = settings_.reconnect_min * (1u << std::min(c.failures, 16u));
    delay = std::min(delay, settings_.reconnect_max);
    ++c.failures;
    c.retry.expires_after(delay);
    c.retry.async_wait([&c](boost::system::error_code ec) {
        if (!ec) c.conn->connect();
    });
}

void redis_bus::arm_loss_log() {
    loss_timer_->expires_after(std::chrono::seconds(1));
    loss_timer_->async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        log_losses(false);
        arm_loss_log();
    });
}

void redis_bus::log_losses(bool final) {
    auto lost = lost_.load(std::memory_order_relaxed);
    auto now = std::chrono::steady_clock::now();
    if (lost == lost_logged_) return;
    if (!final && lost_logged_ != 0 && now - last_loss_log_ < settings_.loss_log_interval) return;
    std::string why = refusal_.empty() ? "Redis unreachable, the queue full, or unconfirmed when a connection dropped"
                                       : "the last refused by Redis: " + refusal_;
    log::warning("realtime: " + std::to_string(lost - lost_logged_) + " publishes lost (" + why + "); " +
                 std::to_string(lost) + " in all");
    refusal_.clear();
    lost_logged_ = lost;
    last_loss_log_ = now;
}

}  // namespace m0::realtime
