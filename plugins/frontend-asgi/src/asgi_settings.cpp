// Validation of the `frontend:` keys of the ASGI frontend.
#include "asgi_settings.hpp"

#include <m0/config.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/websocket/options_config.hpp>

namespace m0::asgi {

settings read_settings(const config_node& section) {
    // Each key is checked on its own, so one run reports all their errors.
    config_errors errors;
    errors.check([&] {
        section.allow_keys({"type", "app", "chdir", "lifespan", "send_buffer", "input_buffer", "websocket"});
    });
    settings s;
    errors.check([&] {
        auto app = section.optional_string("app");
        if (!app || app->empty()) section.fail("app", "the ASGI application is required, e.g. app: \"main:app\"");
        s.app = *app;
    });
    errors.check([&] { s.chdir = python::read_chdir(section); });
    errors.check([&] {
        const std::string mode = section.one_of("lifespan", "auto", {"auto", "on", "off"});
        s.lifespan = mode == "on" ? lifespan_mode::on : mode == "off" ? lifespan_mode::off : lifespan_mode::auto_;
    });
    errors.check([&] {
        s.send_buffer = section.byte_size("send_buffer", 64 * 1024, std::uint64_t(1) << 32);
        if (s.send_buffer < 4096) section.fail("send_buffer", "must be at least 4k");
    });
    errors.check([&] {
        s.input_buffer = section.byte_size("input_buffer", 64 * 1024, std::uint64_t(1) << 30);
        if (s.input_buffer < 4096) section.fail("input_buffer", "must be at least 4k");
    });
    if (auto ws = section.child("websocket"); ws.present() && !ws.is_map()) {
        errors.check([&] {
            section.fail("websocket", "expected a map of WebSocket settings, e.g. {max_message_size: 16m}");
        });
    } else if (ws.present()) {
        errors.check([&] {
            if (ws.has("subprotocols"))
                ws.fail("subprotocols", "the application picks the subprotocol (`subprotocol` in websocket.accept)");
        });
        errors.check([&] { s.websocket = websocket::parse_websocket_options(ws, {"max_queue"}); });
        errors.check([&] { s.websocket_max_queue = static_cast<std::size_t>(ws.integer("max_queue", 16, 1, 65536)); });
    }
    errors.throw_if_any();
    return s;
}

}  // namespace m0::asgi
