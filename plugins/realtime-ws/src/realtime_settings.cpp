#include "realtime_settings.hpp"

#include <algorithm>
#include <m0/websocket/options_config.hpp>

namespace m0::realtime {
namespace {

// A duration key that must be > 0, in whole milliseconds (at least 1).
std::chrono::milliseconds positive_ms(const config_node& node, std::string_view key, std::chrono::milliseconds def) {
    auto d = node.duration(key, def);
    if (d <= std::chrono::nanoseconds::zero()) node.fail(key, "must be greater than 0");
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(d), std::chrono::milliseconds(1));
}

}  // namespace

settings read_settings(const config_node& section) {
    settings s;
    // Each key is checked on its own, so one run reports all their errors.
    config_errors errors;
    errors.check([&] { section.allow_keys({"bus", "bus_prefix", "redis", "outbox", "sse", "websocket"}); });
    errors.check([&] {
        std::string bus = section.string("bus", "memory");
        if (bus != "memory") {
            std::string error;
            s.redis = parse_redis_url(bus, error);
            if (!s.redis) section.fail("bus", error);
        }
    });
    errors.check([&] { s.bus_prefix = section.string("bus_prefix", s.bus_prefix); });
    config_node redis = section.child("redis");
    if (redis.present()) {
        errors.check([&] { redis.allow_keys({"queue_max_messages", "reconnect_max", "connect_timeout"}); });
        errors.check([&] {
            s.redis_queue_max_messages = static_cast<std::size_t>(redis.integer(
                "queue_max_messages", static_cast<std::int64_t>(s.redis_queue_max_messages), 1, 1 << 24));
        });
        errors.check([&] { s.redis_reconnect_max = positive_ms(redis, "reconnect_max", s.redis_reconnect_max); });
        errors.check([&] { s.redis_connect_timeout = positive_ms(redis, "connect_timeout", s.redis_connect_timeout); });
    }
    config_node outbox = section.child("outbox");
    if (outbox.present()) {
        errors.check([&] { outbox.allow_keys({"max_bytes", "max_messages", "overflow"}); });
        errors.check([&] { s.outbox_max_bytes = outbox.byte_size("max_bytes", s.outbox_max_bytes, std::uint64_t(1) << 34); });
        errors.check([&] {
            s.outbox_max_messages = static_cast<std::size_t>(
                outbox.integer("max_messages", static_cast<std::int64_t>(s.outbox_max_messages), 1, 1 << 24));
        });
        errors.check([&] {
            s.overflow = outbox.one_of("overflow", "close", {"close", "drop_oldest"}) == "close"
                             ? overflow_policy::close
                             : overflow_policy::drop_oldest;
        });
    }
    config_node sse = section.child("sse");
    if (sse.present()) {
        errors.check([&] { sse.allow_keys({"heartbeat"}); });
        errors.check([&] { s.sse_heartbeat = positive_ms(sse, "heartbeat", s.sse_heartbeat); });
    }
    config_node ws = section.child("websocket");
    if (ws.present()) errors.check([&] { s.websocket = websocket::parse_websocket_options(ws); });
    errors.throw_if_any();
    return s;
}

}  // namespace m0::realtime
