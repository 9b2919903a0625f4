#include <m0/websocket/frame_parser.hpp>

#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include <m0/websocket/deflate_codec.hpp>

namespace ws = m0::websocket;

namespace {

constexpr std::array<std::uint8_t, 4> mask{0x12, 0x34, 0x56, 0x78};

// What a browser sends: masked frames.
std::string client_frame(ws::opcode op, std::string_view payload, bool fin = true, bool rsv1 = false) {
    return ws::encode_frame(op, payload, fin, rsv1, mask);
}

struct recorder final : ws::frame_sink {
    std::vector<std::string> events;
    void on_message(ws::opcode kind, std::string payload) override {
        events.push_back((kind == ws::opcode::text ? "text:" : "binary:") + payload);
    }
    void on_ping(std::string_view p) override { events.push_back("ping:" + std::string(p)); }
    void on_pong(std::string_view p) override { events.push_back("pong:" + std::string(p)); }
    void on_close(std::uint16_t code, std::string_view reason) override {
        events.push_back("close:" + std::to_string(code) + ":" + std::string(reason));
    }
};

// Feeds `wire` one byte at a time (the worst split) and returns the error.
ws::parse_error feed_bytewise(ws::frame_parser& p, std::string_view wire, recorder& r) {
    for (char c : wire)
        if (auto e = p.feed(std::string_view(&c, 1), r)) return e;
    return {};
}

std::uint16_t error_of(std::string_view wire, ws::parser_options options = {}) {
    ws::frame_parser p(options);
    recorder r;
    return p.feed(wire, r).code;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(frame_parser_tests)

BOOST_AUTO_TEST_CASE(whole_and_bytewise_messages) {
    std::string wire = client_frame(ws::opcode::text, "hello") + client_frame(ws::opcode::binary, std::string(300, 'b')) +
                       client_frame(ws::opcode::binary, "");
    for (bool bytewise : {false, true}) {
        ws::frame_parser p({});
        recorder r;
        auto e = bytewise ? feed_bytewise(p, wire, r) : p.feed(wire, r);
        BOOST_TEST(!e);
        BOOST_TEST_REQUIRE(r.events.size() == 3u);
        BOOST_TEST(r.events[0] == "text:hello");
        BOOST_TEST(r.events[1] == "binary:" + std::string(300, 'b'));
        BOOST_TEST(r.events[2] == "binary:");
    }
}

BOOST_AUTO_TEST_CASE(fragments_with_control_frames_between) {
    std::string wire = client_frame(ws::opcode::text, "frag", false) + client_frame(ws::opcode::ping, "p") +
                       client_frame(ws::opcode::continuation, "men", false) +
                       client_frame(ws::opcode::pong, "q") + client_frame(ws::opcode::continuation, "ted");
    ws::frame_parser p({});
    recorder r;
    BOOST_TEST(!p.feed(wire, r));
    BOOST_TEST((r.events == std::vector<std::string>{"ping:p", "pong:q", "text:fragmented"}));
}

BOOST_AUTO_TEST_CASE(protocol_errors_are_1002) {
    using ws::opcode;
    BOOST_TEST(error_of(ws::encode_frame(opcode::text, "x")) == 1002);  // unmasked
    std::string rsv2 = client_frame(opcode::text, "x");
    rsv2[0] = static_cast<char>(rsv2[0] | 0x20);
    BOOST_TEST(error_of(rsv2) == 1002);
    BOOST_TEST(error_of(client_frame(opcode::text, "x", true, true)) == 1002);  // RSV1 without deflate
    std::string reserved = client_frame(opcode::text, "x");
    reserved[0] = static_cast<char>(0x83);
    BOOST_TEST(error_of(reserved) == 1002);
    reserved[0] = static_cast<char>(0x8B);
    BOOST_TEST(error_of(reserved) == 1002);
    BOOST_TEST(error_of(client_frame(opcode::continuation, "x")) == 1002);             // nothing to continue
    BOOST_TEST(error_of(client_frame(opcode::text, "a", false) + client_frame(opcode::text, "b")) == 1002);
    BOOST_TEST(error_of(client_frame(opcode::ping, "x", false)) == 1002);               // fragmented control
    BOOST_TEST(error_of(client_frame(opcode::ping, std::string(126, 'p'))) == 1002);     // control over 125
    BOOST_TEST(error_of(client_frame(opcode::close, "x")) == 1002);                     // one-byte close
    BOOST_TEST(error_of(ws::encode_close_frame(1005, "", mask)) == 1002);               // reserved code
    BOOST_TEST(error_of(ws::encode_close_frame(5000, "", mask)) == 1002);
}

BOOST_AUTO_TEST_CASE(errors_are_found_from_the_first_two_bytes) {
    // An unmasked frame announcing 16 MiB: refused before its length bytes.
    ws::frame_parser p({});
    recorder r;
    BOOST_TEST(p.feed("\x81\x7f", r).code == 1002);
    // The parser stays failed.
    BOOST_TEST(p.feed(client_frame(ws::opcode::text, "ok"), r).code == 1002);
    BOOST_TEST(r.events.empty());
}

BOOST_AUTO_TEST_CASE(invalid_utf8_fails_fast_even_mid_frame) {
    ws::frame_parser p({});
    recorder r;
    std::string wire = client_frame(ws::opcode::text, "ok \xED\xA0\x80 and much more text after it");
    // The first 2+4+5 bytes hold "ok \xED\xA0": the surrogate is refused there.
    BOOST_TEST(!p.feed(wire.substr(0, 10), r));
    BOOST_TEST(p.feed(wire.substr(10, 1), r).code == 1007);
    BOOST_TEST(r.events.empty());
}

BOOST_AUTO_TEST_CASE(utf8_is_checked_across_fragments) {
    // "€" split over two fragments is fine; a message ending mid-character is not.
    std::string good = client_frame(ws::opcode::text, "\xE2\x82", false) + client_frame(ws::opcode::continuation, "\xAC");
    ws::frame_parser p({});
    recorder r;
    BOOST_TEST(!p.feed(good, r));
    BOOST_TEST(r.events.front() == "text:\xE2\x82\xAC");
    BOOST_TEST(error_of(client_frame(ws::opcode::text, "\xE2\x82")) == 1007);
    BOOST_TEST(error_of(ws::encode_close_frame(1000, "\xFF", mask)) == 1007);
}

BOOST_AUTO_TEST_CASE(message_size_limit_is_1009) {
    ws::parser_options o;
    o.max_message_size = 10;
    BOOST_TEST(error_of(client_frame(ws::opcode::binary, std::string(10, 'x')), o) == 0);
    BOOST_TEST(error_of(client_frame(ws::opcode::binary, std::string(11, 'x')), o) == 1009);
    // Across fragments: 6 + 5.
    BOOST_TEST(error_of(client_frame(ws::opcode::binary, std::string(6, 'x'), false) +
                            client_frame(ws::opcode::continuation, std::string(5, 'x')),
                        o) == 1009);
    // A 64-bit length with the top bit set is a protocol error.
    BOOST_TEST(error_of(std::string("\x82\xFF\x80\x00\x00\x00\x00\x00\x00\x00\x12\x34\x56\x78", 14)) == 1002);
}

BOOST_AUTO_TEST_CASE(close_frame_ends_parsing) {
    ws::frame_parser p({});
    recorder r;
    std::string wire = ws::encode_close_frame(1000, "bye", mask) + client_frame(ws::opcode::text, "late");
    BOOST_TEST(!p.feed(wire, r));
    BOOST_TEST(p.closed());
    BOOST_TEST((r.events == std::vector<std::string>{"close:1000:bye"}));
    ws::frame_parser empty({});
    recorder r2;
    BOOST_TEST(!empty.feed(client_frame(ws::opcode::close, ""), r2));
    BOOST_TEST(r2.events.front() == "close:1005:");
}

BOOST_AUTO_TEST_CASE(compressed_messages_inflate_across_fragments) {
    ws::parser_options o;
    o.deflate = true;
    std::string text(5000, 'a');
    text += "end";
    std::string deflated;
    ws::deflater d(15, 6);
    d.compress(text, deflated, false);
    // Fragmented: RSV1 on the first frame only.
    std::string wire = client_frame(ws::opcode::text, deflated.substr(0, 3), false, true) +
                       client_frame(ws::opcode::continuation, deflated.substr(3));
    // Context takeover: a second message may refer back to the first.
    std::string deflated2;
    d.compress(text, deflated2, false);
    wire += client_frame(ws::opcode::text, deflated2, true, true);
    ws::frame_parser p(o);
    recorder r;
    BOOST_TEST(!feed_bytewise(p, wire, r));
    BOOST_TEST_REQUIRE(r.events.size() == 2u);
    BOOST_TEST(r.events[0] == "text:" + text);
    BOOST_TEST(r.events[1] == "text:" + text);
}

BOOST_AUTO_TEST_CASE(compressed_limits_and_garbage) {
    ws::parser_options o;
    o.deflate = true;
    o.max_message_size = 1000;
    std::string deflated;
    ws::deflater(15, 6).compress(std::string(100000, 'z'), deflated, true);  // a small bomb
    BOOST_TEST(error_of(client_frame(ws::opcode::binary, deflated, true, true), o) == 1009);
    BOOST_TEST(error_of(client_frame(ws::opcode::binary, "\xFF\xFF\xFF\xFF", true, true), o) == 1007);
    BOOST_TEST(error_of(client_frame(ws::opcode::continuation, "x", true, true), o) == 1002);
    BOOST_TEST(error_of(client_frame(ws::opcode::ping, "x", true, true), o) == 1002);
}

BOOST_AUTO_TEST_SUITE_END()
