#pragma once
// One published message, formatted once and shared by every hold that
// receives it (no copy per connection).
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <m0/realtime.hpp>
#include <m0/websocket/prepared_message.hpp>

namespace m0::realtime {

struct message {
    std::shared_ptr<const std::string> data;  // as published: a long-poll body
    std::shared_ptr<const std::string> sse;   // the same as one SSE event
    // The same as one WebSocket frame (text or binary); null when no
    // WebSocket hold receives it.
    std::shared_ptr<const websocket::prepared_message> ws;
    payload_kind ws_kind = payload_kind::text;
};

// `event:` when given, one `data:` line per line of `data` (split on LF, a
// CR before it dropped), then the blank line that ends the event.
std::string format_sse_event(std::string_view data, std::optional<std::string_view> event);

// How a message becomes a WebSocket frame: text or binary, and also
// compressed (zlib `level`) when connections may have negotiated
// permessage-deflate.
struct ws_format {
    payload_kind kind = payload_kind::text;
    bool compress = false;
    int level = 1;
};

// With `ws`, the WebSocket frame too (some hold of the channel is one).
std::shared_ptr<const message> make_message(std::string_view data, std::optional<std::string_view> event,
                                            const ws_format* ws = nullptr);

// The payload and its WebSocket frame: a message for WebSocket holds alone.
std::shared_ptr<const message> make_ws_message(std::string_view data, const ws_format& ws);

}  // namespace m0::realtime
