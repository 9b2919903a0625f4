#include <m0/websocket/deflate_codec.hpp>

#include <boost/test/unit_test.hpp>

namespace ws = m0::websocket;

BOOST_AUTO_TEST_SUITE(deflate_codec_tests)

BOOST_AUTO_TEST_CASE(round_trip_without_the_sync_tail) {
    std::string text;
    for (int i = 0; i < 500; ++i) text += "the quick brown fox " + std::to_string(i) + "\n";
    std::string deflated;
    ws::deflater d(15, 1);
    d.compress(text, deflated, true);
    BOOST_TEST(deflated.size() < text.size());
    BOOST_TEST(deflated.substr(deflated.size() - 4) != std::string("\x00\x00\xFF\xFF", 4));
    ws::inflater in(15);
    std::string out;
    BOOST_TEST((in.feed(deflated, out, 1 << 20) == ws::inflater::result::ok));
    BOOST_TEST((in.finish(out, 1 << 20, true) == ws::inflater::result::ok));
    BOOST_TEST(out == text);
}

BOOST_AUTO_TEST_CASE(no_context_takeover_frames_stand_alone) {
    // The shared deflater resets per message: the same message compresses
    // to the same bytes every time, and each inflates on a fresh stream.
    auto& shared = ws::deflater::shared(15, 1);
    std::string a, b;
    shared.compress("hello hello hello", a, true);
    shared.compress("hello hello hello", b, true);
    BOOST_TEST(a == b);
    BOOST_TEST(&shared == &ws::deflater::shared(15, 1));
    ws::inflater fresh(15);
    std::string out;
    BOOST_TEST((fresh.feed(b, out, 100) == ws::inflater::result::ok));
    BOOST_TEST((fresh.finish(out, 100, true) == ws::inflater::result::ok));
    BOOST_TEST(out == "hello hello hello");
}

BOOST_AUTO_TEST_CASE(empty_message) {
    std::string deflated;
    ws::deflater(9, 1).compress("", deflated, true);
    ws::inflater in(9);
    std::string out;
    BOOST_TEST((in.feed(deflated, out, 10) == ws::inflater::result::ok));
    BOOST_TEST((in.finish(out, 10, true) == ws::inflater::result::ok));
    BOOST_TEST(out.empty());
}

BOOST_AUTO_TEST_CASE(size_limit_and_bad_data) {
    std::string deflated;
    ws::deflater(15, 9).compress(std::string(1 << 20, 'x'), deflated, true);
    ws::inflater in(15);
    std::string out;
    BOOST_TEST((in.feed(deflated, out, 4096) == ws::inflater::result::too_big));
    BOOST_TEST(out.size() <= 4097u);  // stopped at the limit, not after inflating it all
    ws::inflater bad(15);
    out.clear();
    BOOST_TEST((bad.feed("\xFF\xFF\xFF", out, 100) == ws::inflater::result::bad_data));
}

BOOST_AUTO_TEST_SUITE_END()
