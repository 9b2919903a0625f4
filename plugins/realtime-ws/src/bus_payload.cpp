#include "bus_payload.hpp"

namespace m0::realtime {

std::string encode_bus_payload(std::string_view data, std::optional<std::string_view> event) {
    bool named = event && !event->empty();
    if (!named && (data.empty() || data.front() != bus_frame_marker)) return std::string(data);
    std::string out;
    out.reserve(data.size() + (named ? event->size() : 0) + 2);
    out += bus_frame_marker;
    if (named) out += *event;
    out += '\n';
    out += data;
    return out;
}

bus_payload decode_bus_payload(std::string_view payload) {
    if (payload.empty() || payload.front() != bus_frame_marker) return {payload, std::nullopt};
    auto lf = payload.find('\n');
    if (lf == std::string_view::npos) return {payload, std::nullopt};
    std::string_view name = payload.substr(1, lf - 1);
    if (name.find('\r') != std::string_view::npos) return {payload, std::nullopt};
    return {payload.substr(lf + 1), name.empty() ? std::nullopt : std::optional(name)};
}

}  // namespace m0::realtime
