#include <m0/websocket/frame.hpp>

#include <boost/test/unit_test.hpp>

namespace ws = m0::websocket;

BOOST_AUTO_TEST_SUITE(frame_tests)

BOOST_AUTO_TEST_CASE(header_length_forms) {
    BOOST_TEST(ws::encode_frame_header(ws::opcode::text, 5) == std::string("\x81\x05", 2));
    BOOST_TEST(ws::encode_frame_header(ws::opcode::binary, 126) == std::string("\x82\x7E\x00\x7E", 4));
    BOOST_TEST(ws::encode_frame_header(ws::opcode::binary, 65536) ==
               std::string("\x82\x7F\x00\x00\x00\x00\x00\x01\x00\x00", 10));
    BOOST_TEST(ws::encode_frame_header(ws::opcode::text, 0, false, true) == std::string("\x41\x00", 2));
}

BOOST_AUTO_TEST_CASE(masking_round_trips_from_any_phase) {
    std::array<std::uint8_t, 4> mask{0x37, 0xfa, 0x21, 0x3d};
    auto frame = ws::encode_frame(ws::opcode::text, "Hello", true, false, mask);
    // RFC 6455 5.7: a masked "Hello".
    BOOST_TEST(frame == std::string("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
    std::string long_text(100, 'x');
    std::string masked = long_text;
    auto phase = ws::apply_mask(masked.data(), 3, mask, 0);
    ws::apply_mask(masked.data() + 3, masked.size() - 3, mask, phase);
    ws::apply_mask(masked.data(), masked.size(), mask, 0);
    BOOST_TEST(masked == long_text);
}

BOOST_AUTO_TEST_CASE(close_frame_reason_is_cut_at_a_character) {
    std::string reason;
    for (int i = 0; i < 60; ++i) reason += "\xC3\xA9";  // 120 bytes of 'é'
    reason = "x" + reason + reason;                     // 241 bytes
    auto frame = ws::encode_close_frame(1000, reason);
    BOOST_TEST(frame.size() <= 2 + ws::max_control_payload);
    BOOST_TEST(static_cast<unsigned char>(frame[2]) == 0x03);
    BOOST_TEST(static_cast<unsigned char>(frame[3]) == 0xE8);
    BOOST_TEST((frame.size() - 4) % 2 == 1);  // "x" and whole 2-byte characters
}

BOOST_AUTO_TEST_CASE(close_code_ranges) {
    for (std::uint16_t ok : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4999})
        BOOST_TEST(ws::is_valid_close_code(ok), ok);
    for (std::uint16_t bad : {0, 999, 1004, 1005, 1006, 1012, 1015, 2999, 5000, 65535})
        BOOST_TEST(!ws::is_valid_close_code(bad), bad);
}

BOOST_AUTO_TEST_SUITE_END()
