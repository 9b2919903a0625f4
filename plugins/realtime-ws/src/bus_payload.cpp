#include "bus_payload.hpp"

#include <m0/websocket/utf8_validator.hpp>

namespace m0::realtime {

namespace {

// Unmarked data: text when a WebSocket text frame may carry it.
payload_kind kind_of(std::string_view data) {
    return websocket::is_valid_utf8(data) ? payload_kind::text : payload_kind::binary;
}

}  // namespace

std::string encode_bus_payload(std::string_view data, std::optional<std::string_view> event, payload_kind kind) {
    bool named = event && !event->empty();
    bool binary = kind == payload_kind::binary;
    if (!named && !binary && (data.empty() || data.front() != bus_frame_marker)) return std::string(data);
    std::string out;
    out.reserve(data.size() + (named ? event->size() : 0) + 3);
    out += bus_frame_marker;
    if (binary) out += bus_binary_mark;
    if (named) out += *event;
    out += '\n';
    out += data;
    return out;
}

bus_payload decode_bus_payload(std::string_view payload) {
    auto whole = [&] { return bus_payload{payload, std::nullopt, kind_of(payload)}; };
    if (payload.empty() || payload.front() != bus_frame_marker) return whole();
    auto lf = payload.find('\n');
    if (lf == std::string_view::npos) return whole();
    std::string_view name = payload.substr(1, lf - 1);
    bool binary = !name.empty() && name.front() == bus_binary_mark;
    if (binary) name.remove_prefix(1);
    if (name.find('\r') != std::string_view::npos) return whole();
    std::string_view data = payload.substr(lf + 1);
    return {data, name.empty() ? std::nullopt : std::optional(name), binary ? payload_kind::binary : kind_of(data)};
}

}  // namespace m0::realtime
