#include "realtime_settings.hpp"

#include <m0/websocket/options_config.hpp>

namespace m0::realtime {

settings read_settings(const config_node& section) {
    settings s;
    section.allow_keys({"bus", "outbox", "sse", "websocket"});
    // Only the in-process bus exists so far: say so rather than ignore a URL.
    section.one_of("bus", "memory", {"memory"});
    config_node outbox = section.child("outbox");
    if (outbox.present()) {
        outbox.allow_keys({"max_bytes", "max_messages", "overflow"});
        s.outbox_max_bytes = outbox.byte_size("max_bytes", s.outbox_max_bytes, std::uint64_t(1) << 34);
        s.outbox_max_messages =
            static_cast<std::size_t>(outbox.integer("max_messages", static_cast<std::int64_t>(s.outbox_max_messages), 1, 1 << 24));
        s.overflow = outbox.one_of("overflow", "close", {"close", "drop_oldest"}) == "close" ? overflow_policy::close
                                                                                              : overflow_policy::drop_oldest;
    }
    config_node sse = section.child("sse");
    if (sse.present()) {
        sse.allow_keys({"heartbeat"});
        auto hb = sse.duration("heartbeat", s.sse_heartbeat);
        if (hb <= std::chrono::nanoseconds::zero()) sse.fail("heartbeat", "must be greater than 0");
        s.sse_heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(hb);
        if (s.sse_heartbeat.count() == 0) s.sse_heartbeat = std::chrono::milliseconds(1);
    }
    config_node ws = section.child("websocket");
    if (ws.present()) s.websocket = websocket::parse_websocket_options(ws);
    return s;
}

}  // namespace m0::realtime
