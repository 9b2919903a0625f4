#include <m0/websocket/prepared_message.hpp>

#include <boost/test/unit_test.hpp>

#include <m0/websocket/deflate_codec.hpp>

namespace ws = m0::websocket;

BOOST_AUTO_TEST_SUITE(prepared_message_tests)

BOOST_AUTO_TEST_CASE(plain_frame_is_one_unmasked_final_frame) {
    ws::prepared_message m(ws::opcode::text, "hello");
    BOOST_TEST(*m.plain_frame() == std::string("\x81\x05hello", 7));
    BOOST_TEST(!m.compressed_frame());
}

BOOST_AUTO_TEST_CASE(compressed_frame_inflates_on_a_fresh_stream) {
    std::string payload;
    for (int i = 0; i < 200; ++i) payload += "{\"event\":\"tick\",\"n\":" + std::to_string(i) + "}";
    ws::prepared_message m(ws::opcode::binary, payload, true);
    const std::string& frame = *m.compressed_frame();
    BOOST_TEST(static_cast<unsigned char>(frame[0]) == 0xC2u);  // FIN, RSV1, binary
    const std::size_t head = (static_cast<unsigned char>(frame[1]) == 126) ? 4 : 2;
    BOOST_TEST_REQUIRE(frame.size() < payload.size());
    // Any receiver, whatever it inflated before, reads it: no context is kept.
    ws::inflater in(15);
    std::string out;
    BOOST_TEST((in.feed(std::string_view(frame).substr(head), out, 1 << 20) == ws::inflater::result::ok));
    BOOST_TEST((in.finish(out, 1 << 20, true) == ws::inflater::result::ok));
    BOOST_TEST(out == payload);
}

BOOST_AUTO_TEST_SUITE_END()
