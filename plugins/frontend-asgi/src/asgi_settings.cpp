// Validation of the `frontend:` keys of the ASGI frontend.
#include "asgi_settings.hpp"

#include <filesystem>

#include <m0/config.hpp>
#include <m0/websocket/options_config.hpp>

namespace m0::asgi {
namespace fs = std::filesystem;

settings read_settings(const config_node& section) {
    section.allow_keys({"type", "app", "chdir", "lifespan", "send_buffer", "input_buffer", "websocket"});
    settings s;
    auto app = section.optional_string("app");
    if (!app || app->empty())
        section.fail("app", "the ASGI application is required, e.g. app: \"main:app\"");
    s.app = *app;
    if (auto dir = section.optional_string("chdir"); dir && !dir->empty()) {
        fs::path p(*dir);
        if (p.is_relative()) p = fs::path(section.base_dir()) / p;
        s.chdir = p.lexically_normal().string();
        std::error_code ec;
        if (!fs::is_directory(s.chdir, ec)) section.fail("chdir", "'" + s.chdir + "' is not a directory");
        section.set_effective("chdir", s.chdir);  // --check prints a config valid from anywhere
    }
    const std::string mode = section.one_of("lifespan", "auto", {"auto", "on", "off"});
    s.lifespan = mode == "on" ? lifespan_mode::on : mode == "off" ? lifespan_mode::off : lifespan_mode::auto_;
    s.send_buffer = section.byte_size("send_buffer", 64 * 1024, std::uint64_t(1) << 32);
    if (s.send_buffer < 4096) section.fail("send_buffer", "must be at least 4k");
    s.input_buffer = section.byte_size("input_buffer", 64 * 1024, std::uint64_t(1) << 30);
    if (s.input_buffer < 4096) section.fail("input_buffer", "must be at least 4k");
    if (auto ws = section.child("websocket"); ws.present()) {
        if (!ws.is_map()) section.fail("websocket", "expected a map of WebSocket settings, e.g. {max_message_size: 16m}");
        if (ws.has("subprotocols"))
            ws.fail("subprotocols", "the application picks the subprotocol (`subprotocol` in websocket.accept)");
        s.websocket = websocket::parse_websocket_options(ws, {"max_queue"});
        s.websocket_max_queue = static_cast<std::size_t>(ws.integer("max_queue", 16, 1, 65536));
    }
    return s;
}

}  // namespace m0::asgi
