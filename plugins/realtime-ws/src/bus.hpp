#pragma once
// The bus under the hub: carries publishes to every process that holds the
// channel and hands what arrives to a sink. `memory` reaches this process
// only; `redis` (redis_bus.hpp) every process on one Redis server.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <m0/realtime.hpp>

namespace m0::realtime {

// One message as it arrives from the bus; the views live for the sink call.
struct bus_message {
    std::string_view channel;
    std::string_view data;
    std::optional<std::string_view> event;
    payload_kind kind = payload_kind::text;  // how a WebSocket hold frames it
};

class bus {
public:
    // A batch of messages, in the order the bus received them. Runs on the
    // bus's thread (memory: the publisher's).
    using sink = std::function<void(std::span<const bus_message>)>;

    virtual ~bus() = default;

    // In the serving process (after a fork), before the first publish.
    virtual void start(sink deliver) = 0;
    // After the reactors stopped; no sink call runs once it returns.
    virtual void stop() = 0;

    // Any thread; never blocks on the network or a client.
    virtual void publish(std::string_view channel, std::string_view data, std::optional<std::string_view> event,
                         payload_kind kind) = 0;

    // Any thread. Counted per channel: the bus listens to a channel from its
    // first subscribe until the matching last unsubscribe.
    virtual void subscribe(std::string_view channel) = 0;
    virtual void unsubscribe(std::string_view channel) = 0;

    // Any thread but the bus's: returns once the bus delivers every one of
    // `channels` to this process (after subscribe), the bus is unreachable,
    // or the bus's connect timeout passed. A message published from anywhere
    // after it returned reaches the sink. The memory bus returns at once.
    virtual void wait_listening(std::span<const std::string> channels) {}

    virtual bus_stats stats() const = 0;
    // "memory", or the Redis URL without its password.
    virtual std::string describe() const = 0;
};

}  // namespace m0::realtime
