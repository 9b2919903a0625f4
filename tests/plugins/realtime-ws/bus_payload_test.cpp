// The bytes of a message on the Redis bus: a plain PUBLISH is plain data; an
// event name travels in a NUL-led frame; any data survives the round trip.
#define BOOST_TEST_MODULE realtime_bus_payload
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>

#include "bus_payload.hpp"

using m0::realtime::decode_bus_payload;
using m0::realtime::encode_bus_payload;
using namespace std::string_literals;

namespace {

void round_trip(const std::string& data, std::optional<std::string> event) {
    std::optional<std::string_view> ev = event ? std::optional<std::string_view>(*event) : std::nullopt;
    std::string wire = encode_bus_payload(data, ev);
    auto back = decode_bus_payload(wire);
    BOOST_TEST(std::string(back.data) == data);
    bool named = event && !event->empty();
    BOOST_TEST(back.event.has_value() == named);
    if (named) BOOST_TEST(std::string(*back.event) == *event);
}

}  // namespace

BOOST_AUTO_TEST_CASE(plain_data_is_sent_as_is) {
    BOOST_TEST(encode_bus_payload("hello", std::nullopt) == "hello");
    BOOST_TEST(encode_bus_payload("{\"a\": 1}\n", std::nullopt) == "{\"a\": 1}\n");
    BOOST_TEST(encode_bus_payload("", std::nullopt) == "");
}

BOOST_AUTO_TEST_CASE(what_any_redis_client_publishes_is_data) {
    auto p = decode_bus_payload("job 42 done");
    BOOST_TEST(std::string(p.data) == "job 42 done");
    BOOST_TEST(!p.event.has_value());
    BOOST_TEST(decode_bus_payload("").data.empty());
}

BOOST_AUTO_TEST_CASE(an_event_is_framed) {
    BOOST_TEST(encode_bus_payload("hi", "greet") == "\0greet\nhi"s);
    const auto wire = "\0progress\n{\"pct\": 40}"s;  // the views point into it
    auto p = decode_bus_payload(wire);
    BOOST_TEST(std::string(p.data) == "{\"pct\": 40}");
    BOOST_TEST(std::string(p.event.value()) == "progress");
}

BOOST_AUTO_TEST_CASE(an_empty_event_name_is_no_event) {
    // SSE dispatches an empty `event:` as a plain message: the same thing.
    BOOST_TEST(encode_bus_payload("x", "") == "x");
    const auto wire = "\0\nx"s;
    auto p = decode_bus_payload(wire);
    BOOST_TEST(std::string(p.data) == "x");
    BOOST_TEST(!p.event.has_value());
}

BOOST_AUTO_TEST_CASE(data_that_starts_with_nul_survives) {
    BOOST_TEST(encode_bus_payload("\0binary"s, std::nullopt) == "\0\n\0binary"s);
    round_trip("\0binary"s, std::nullopt);
    round_trip("\0\n\0"s, "e");
}

BOOST_AUTO_TEST_CASE(round_trips) {
    round_trip("", std::nullopt);
    round_trip("", "ping");
    round_trip("two\nlines", "chat");
    round_trip("a\0b"s, std::nullopt);
    round_trip("\xff\xfe", "bin");
}

BOOST_AUTO_TEST_CASE(a_broken_frame_is_delivered_whole) {
    // No LF after the NUL, or a CR in the name: not a frame, so the bytes go
    // out as data rather than being lost.
    const auto unframed = "\0no newline"s;
    auto p = decode_bus_payload(unframed);
    BOOST_TEST(std::string(p.data) == unframed);
    BOOST_TEST(!p.event.has_value());
    const auto cr = "\0bad\rname\nx"s;
    auto q = decode_bus_payload(cr);
    BOOST_TEST(std::string(q.data) == cr);
    BOOST_TEST(!q.event.has_value());
}

BOOST_AUTO_TEST_CASE(binary_is_marked_and_plain_data_is_text_when_utf8) {
    using m0::realtime::payload_kind;
    // Python bytes published by m0 stay binary for WebSocket holds.
    BOOST_TEST(encode_bus_payload("ab", std::nullopt, payload_kind::binary) == "\0\x01\nab"s);
    const auto wire = "\0\x01tick\nab"s;
    auto p = decode_bus_payload(wire);
    BOOST_TEST((p.kind == payload_kind::binary));
    BOOST_TEST(std::string(p.event.value()) == "tick");
    BOOST_TEST(std::string(p.data) == "ab");
    // What another client publishes: text if a text frame may carry it.
    BOOST_TEST((decode_bus_payload("caf\xc3\xa9").kind == payload_kind::text));
    BOOST_TEST((decode_bus_payload("\xff\xfe").kind == payload_kind::binary));
    const auto framed_text = "\0e\nhi"s;
    BOOST_TEST((decode_bus_payload(framed_text).kind == payload_kind::text));
}
