#include <m0/websocket/options_config.hpp>

#include <m0/config.hpp>

namespace m0::websocket {
namespace {

constexpr std::chrono::nanoseconds max_timeout = std::chrono::hours(24);

std::chrono::nanoseconds timeout(const config_node& node, std::string_view key, std::chrono::nanoseconds def) {
    auto d = node.duration(key, def);
    if (d < std::chrono::nanoseconds{0} || d > max_timeout) node.fail(key, "expected a duration between 0s and 24h");
    return d;
}

deflate_options parse_deflate(const config_node& node) {
    deflate_options d;
    auto section = node.child("permessage_deflate");
    if (!section.present()) return d;
    if (section.is_scalar()) {
        d.enabled = node.boolean("permessage_deflate", true);
        return d;
    }
    if (!section.is_map()) node.fail("permessage_deflate", "expected true, false or a map of deflate settings");
    config_errors errors;
    errors.check([&] {
        section.allow_keys({"enabled", "server_no_context_takeover", "client_no_context_takeover",
                            "server_max_window_bits", "client_max_window_bits", "level"});
    });
    errors.check([&] { d.enabled = section.boolean("enabled", d.enabled); });
    errors.check([&] {
        d.server_no_context_takeover = section.boolean("server_no_context_takeover", d.server_no_context_takeover);
    });
    errors.check([&] {
        d.client_no_context_takeover = section.boolean("client_no_context_takeover", d.client_no_context_takeover);
    });
    errors.check([&] {
        d.server_max_window_bits =
            static_cast<int>(section.integer("server_max_window_bits", d.server_max_window_bits, 9, 15));
    });
    errors.check([&] {
        d.client_max_window_bits =
            static_cast<int>(section.integer("client_max_window_bits", d.client_max_window_bits, 9, 15));
    });
    errors.check([&] { d.level = static_cast<int>(section.integer("level", d.level, 0, 9)); });
    errors.throw_if_any();
    return d;
}

}  // namespace

websocket_options parse_websocket_options(const config_node& node, const std::vector<std::string>& extra_keys) {
    std::vector<std::string> keys = {"max_message_size", "ping_interval", "ping_timeout", "idle_timeout",
                                     "close_timeout", "max_write_buffer", "subprotocols", "permessage_deflate"};
    keys.insert(keys.end(), extra_keys.begin(), extra_keys.end());
    // Each key is checked on its own, so one run reports all their errors.
    config_errors errors;
    errors.check([&] { node.allow_keys(keys); });
    websocket_options o;
    auto& s = o.session;
    errors.check([&] {
        s.max_message_size = node.byte_size("max_message_size", s.max_message_size, std::uint64_t{1} << 40);
        if (s.max_message_size == 0) node.fail("max_message_size", "expected a size above 0, e.g. 1m");
    });
    const bool interval_ok = errors.check([&] { s.ping_interval = timeout(node, "ping_interval", s.ping_interval); });
    errors.check([&] {
        s.ping_timeout = timeout(node, "ping_timeout", s.ping_timeout);
        if (interval_ok && s.ping_interval.count() > 0 && s.ping_timeout.count() == 0)
            node.fail("ping_timeout", "a ping needs a timeout above 0s (or set ping_interval: 0s to disable pings)");
    });
    errors.check([&] { s.idle_timeout = timeout(node, "idle_timeout", s.idle_timeout); });
    errors.check([&] { s.close_timeout = timeout(node, "close_timeout", s.close_timeout); });
    errors.check([&] {
        s.max_write_buffer = node.byte_size("max_write_buffer", s.max_write_buffer, std::uint64_t{1} << 34);
    });
    errors.check([&] {
        for (auto& p : node.string_list("subprotocols", {})) {
            if (!http::is_token(p)) node.fail("subprotocols", "'" + p + "' is not a valid subprotocol name (a token)");
            o.handshake.subprotocols.push_back(std::move(p));
        }
    });
    errors.check([&] { o.handshake.deflate = parse_deflate(node); });
    errors.throw_if_any();
    return o;
}

}  // namespace m0::websocket
