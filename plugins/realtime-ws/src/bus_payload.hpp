#pragma once
// How a message travels as the bytes of a Redis PUBLISH, so that a plain
// `PUBLISH m0:<channel> <bytes>` from any Redis client is a plain message:
//
//   * a payload that does not start with a NUL byte is the data, whole;
//   * a payload that starts with NUL is framed: NUL, an optional 0x01 byte
//     (the data is binary), the event name, LF, the data. An empty name
//     means no event; a name never starts with 0x01.
//
// Text (UTF-8, JSON) never starts with NUL, so only m0 (or a publisher that
// wants an SSE `event:`) frames. m0 frames a message that has an event, one
// published as binary (Python bytes), and one whose data itself starts with
// NUL (with an empty name), so any bytes survive the trip. A message without
// the binary mark goes to WebSocket holds as text when it is valid UTF-8 and
// as binary otherwise (a text frame must be UTF-8).
#include <optional>
#include <string>
#include <string_view>

#include <m0/realtime.hpp>

namespace m0::realtime {

inline constexpr char bus_frame_marker = '\0';
inline constexpr char bus_binary_mark = '\x01';

std::string encode_bus_payload(std::string_view data, std::optional<std::string_view> event,
                               payload_kind kind = payload_kind::text);

struct bus_payload {
    std::string_view data;
    std::optional<std::string_view> event;
    payload_kind kind = payload_kind::text;
};

// Views into `payload`. A NUL-prefixed payload without an LF, or whose name
// holds a CR (no SSE line could carry it), is not a frame: it is all data,
// so nothing published is lost.
bus_payload decode_bus_payload(std::string_view payload);

}  // namespace m0::realtime
