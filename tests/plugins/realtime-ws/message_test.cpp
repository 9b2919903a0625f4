// A published message as an SSE event and a WebSocket frame, and the `realtime:` keys.
#define BOOST_TEST_MODULE realtime_message
#include <boost/test/unit_test.hpp>

#include <string>

#include <m0/config.hpp>

#include "core/config/config_test_support.hpp"
#include "message.hpp"
#include "realtime_settings.hpp"

using m0::realtime::format_sse_event;

namespace {

m0::realtime::settings parse(const std::string& yaml) {
    auto doc = m0::config_document::from_string(yaml, "test.yaml");
    return m0::realtime::read_settings(doc.root().child("realtime"));
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_line_without_event) { BOOST_TEST(format_sse_event("hi", std::nullopt) == "data: hi\n\n"); }

BOOST_AUTO_TEST_CASE(event_name_and_a_data_line_per_line) {
    BOOST_TEST(format_sse_event("a\nb\r\nc", "chat") == "event: chat\ndata: a\ndata: b\ndata: c\n\n");
}

BOOST_AUTO_TEST_CASE(empty_and_trailing_lines_are_kept) {
    // An empty payload is still an event (one empty data line); a trailing
    // newline is an empty last line, as a client would read it back.
    BOOST_TEST(format_sse_event("", std::nullopt) == "data: \n\n");
    BOOST_TEST(format_sse_event("x\n", std::nullopt) == "data: x\ndata: \n\n");
}

BOOST_AUTO_TEST_CASE(settings_defaults_and_values) {
    auto d = parse("realtime: {}\n");
    BOOST_TEST(d.outbox_max_bytes == 1u << 20);
    BOOST_TEST(d.outbox_max_messages == 1024u);
    BOOST_TEST((d.overflow == m0::realtime::overflow_policy::close));
    BOOST_TEST(d.sse_heartbeat.count() == 15000);
    BOOST_TEST(!d.redis.has_value());
    BOOST_TEST(d.bus_prefix == "m0:");
    auto s = parse("realtime:\n  outbox: {max_bytes: 64k, max_messages: 8, overflow: drop_oldest}\n"
                   "  sse: {heartbeat: 2s}\n");
    BOOST_TEST(s.outbox_max_bytes == 64u * 1024);
    BOOST_TEST(s.outbox_max_messages == 8u);
    BOOST_TEST((s.overflow == m0::realtime::overflow_policy::drop_oldest));
    BOOST_TEST(s.sse_heartbeat.count() == 2000);
    auto r = parse("realtime:\n  bus: \"redis://10.1.2.3:6390/1\"\n  bus_prefix: \"shop:\"\n"
                   "  redis: {queue_max_messages: 100, reconnect_max: 1s, connect_timeout: 500ms}\n");
    BOOST_TEST_REQUIRE(r.redis.has_value());
    BOOST_TEST(r.redis->host == "10.1.2.3");
    BOOST_TEST(r.redis->port == 6390);
    BOOST_TEST(r.bus_prefix == "shop:");
    BOOST_TEST(r.redis_queue_max_messages == 100u);
    BOOST_TEST(r.redis_reconnect_max.count() == 1000);
    BOOST_TEST(r.redis_connect_timeout.count() == 500);
}

BOOST_AUTO_TEST_CASE(settings_errors_name_the_key) {
    auto err = m0::test::error_of([] { parse("realtime: {bus: \"redis://127.0.0.1:99999/0\"}\n"); });
    BOOST_TEST(err.find("realtime.bus") != std::string::npos, err);
    BOOST_TEST(err.find("port must be a number 1..65535") != std::string::npos, err);
    BOOST_TEST(err.find("test.yaml:1:") != std::string::npos, err);
    err = m0::test::error_of([] { parse("realtime: {bus: redis}\n"); });
    BOOST_TEST(err.find("expected 'memory', 'redis://host:port/db'") != std::string::npos, err);
    err = m0::test::error_of([] { parse("realtime: {bus: \"unix:///r.sock\", redis: {reconnect_max: 0s}}\n"); });
    BOOST_TEST(err.find("realtime.redis.reconnect_max") != std::string::npos, err);
    err = m0::test::error_of([] { parse("realtime: {outbox: {max_mesages: 3}}\n"); });
    BOOST_TEST(err.find("did you mean 'max_messages'") != std::string::npos, err);
    err = m0::test::error_of([] { parse("realtime: {sse: {heartbeat: 0s}}\n"); });
    BOOST_TEST(err.find("realtime.sse.heartbeat") != std::string::npos, err);
}

namespace {

// The payload of an unmasked server frame with a 7-bit length.
std::string short_frame_payload(const std::string& frame) { return frame.substr(2); }

}  // namespace

BOOST_AUTO_TEST_CASE(a_ws_frame_only_when_a_websocket_holds_the_channel) {
    auto plain = m0::realtime::make_message("hi", std::nullopt);
    BOOST_TEST(!plain->ws);  // no WebSocket hold: no frame built
    m0::realtime::ws_format text{m0::realtime::payload_kind::text, false, 1};
    auto m = m0::realtime::make_message("hi", "chat", &text);
    BOOST_TEST(*m->sse == "event: chat\ndata: hi\n\n");
    BOOST_TEST(*m->data == "hi");
    const std::string& frame = *m->ws->plain_frame();
    BOOST_TEST(static_cast<unsigned char>(frame[0]) == 0x81u);  // FIN, text
    BOOST_TEST(short_frame_payload(frame) == "hi");
    BOOST_TEST(!m->ws->compressed_frame());
}

BOOST_AUTO_TEST_CASE(bytes_are_a_binary_frame_and_compression_is_built_once) {
    m0::realtime::ws_format binary{m0::realtime::payload_kind::binary, true, 1};
    auto m = m0::realtime::make_ws_message(std::string(300, 'a'), binary);
    BOOST_TEST(static_cast<unsigned char>((*m->ws->plain_frame())[0]) == 0x82u);  // FIN, binary
    BOOST_REQUIRE(m->ws->compressed_frame());
    BOOST_TEST(static_cast<unsigned char>((*m->ws->compressed_frame())[0]) == 0xC2u);  // FIN, RSV1, binary
    BOOST_TEST(m->ws->compressed_frame()->size() < m->ws->plain_frame()->size());
    BOOST_TEST((m->ws_kind == m0::realtime::payload_kind::binary));
    BOOST_TEST(*m->data == std::string(300, 'a'));  // kept for a peer the shared compressed frame does not fit
}

BOOST_AUTO_TEST_CASE(websocket_keys_are_the_libraries) {
    auto d = parse("realtime: {}\n");
    BOOST_TEST(d.websocket.session.max_message_size == 1024u * 1024);
    BOOST_TEST(d.websocket.handshake.deflate.enabled);
    auto s = parse("realtime:\n  websocket: {max_message_size: 4k, ping_interval: 0s, permessage_deflate: false}\n");
    BOOST_TEST(s.websocket.session.max_message_size == 4096u);
    BOOST_TEST(s.websocket.session.ping_interval.count() == 0);
    BOOST_TEST(!s.websocket.handshake.deflate.enabled);
    auto err = m0::test::error_of([] { parse("realtime: {websocket: {max_mesage_size: 1k}}\n"); });
    BOOST_TEST(err.find("realtime.websocket") != std::string::npos, err);
    BOOST_TEST(err.find("did you mean 'max_message_size'") != std::string::npos, err);
}
