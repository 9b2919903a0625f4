#include "message.hpp"

namespace m0::realtime {

std::string format_sse_event(std::string_view data, std::optional<std::string_view> event) {
    std::string out;
    out.reserve(data.size() + 16);
    if (event) {
        out += "event: ";
        out += *event;
        out += '\n';
    }
    for (;;) {
        auto nl = data.find('\n');
        std::string_view line = data.substr(0, nl);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        out += "data: ";
        out += line;
        out += '\n';
        if (nl == std::string_view::npos) break;
        data.remove_prefix(nl + 1);
    }
    out += '\n';
    return out;
}

namespace {

std::shared_ptr<const websocket::prepared_message> frame(std::string_view data, const ws_format& ws) {
    return std::make_shared<const websocket::prepared_message>(
        ws.kind == payload_kind::binary ? websocket::opcode::binary : websocket::opcode::text, data, ws.compress,
        ws.level);
}

}  // namespace

std::shared_ptr<const message> make_message(std::string_view data, std::optional<std::string_view> event,
                                            const ws_format* ws) {
    auto m = std::make_shared<message>();
    m->data = std::make_shared<const std::string>(data);
    m->sse = std::make_shared<const std::string>(format_sse_event(data, event));
    if (ws) {
        m->ws = frame(data, *ws);
        m->ws_kind = ws->kind;
    }
    return m;
}

std::shared_ptr<const message> make_ws_message(std::string_view data, const ws_format& ws) {
    auto m = std::make_shared<message>();
    m->data = std::make_shared<const std::string>(data);
    m->ws = frame(data, ws);
    m->ws_kind = ws.kind;
    return m;
}

}  // namespace m0::realtime
