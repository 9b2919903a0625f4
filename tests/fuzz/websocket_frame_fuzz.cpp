// libFuzzer target over libs/websocket's frame parser (the reader of client
// frames, with and without permessage-deflate).
//
// Input: one control byte, then bytes. The control byte picks the parser's
// options (deflate on/off, no context takeover, a small or the default
// message size limit) and how the bytes are split into reads.
//
// Each input runs twice:
//  1. the bytes as a client's stream: any error is a close code the
//     protocol allows, stays the error for later reads, and nothing is
//     delivered after it or after a close frame; every text message is
//     valid UTF-8 and no message is over the limit;
//  2. the bytes as a message payload, written the way a client would
//     (masked, fragmented, compressed when deflate is on): the parser must
//     deliver exactly that message back (as binary, or as text when it is
//     valid UTF-8).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <m0/websocket/deflate_codec.hpp>
#include <m0/websocket/frame.hpp>
#include <m0/websocket/frame_parser.hpp>
#include <m0/websocket/utf8_validator.hpp>

namespace ws = m0::websocket;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

struct checking_sink final : ws::frame_sink {
    std::uint64_t max_size = 0;
    bool closed = false;
    std::size_t messages = 0;
    std::string last;
    ws::opcode last_kind = ws::opcode::binary;

    void on_message(ws::opcode kind, std::string payload) override {
        check(!closed);
        check(kind == ws::opcode::text || kind == ws::opcode::binary);
        check(payload.size() <= max_size);
        if (kind == ws::opcode::text) check(ws::is_valid_utf8(payload));
        ++messages;
        last = std::move(payload);
        last_kind = kind;
    }
    void on_ping(std::string_view p) override { check(!closed && p.size() <= ws::max_control_payload); }
    void on_pong(std::string_view p) override { check(!closed && p.size() <= ws::max_control_payload); }
    void on_close(std::uint16_t code, std::string_view reason) override {
        check(!closed);
        check(code == ws::close_code::no_status || ws::is_valid_close_code(code));
        check(ws::is_valid_utf8(reason));
        closed = true;
    }
};

bool allowed_close(std::uint16_t code) {
    return code == ws::close_code::protocol_error || code == ws::close_code::invalid_payload ||
           code == ws::close_code::message_too_big;
}

ws::parser_options options_for(std::uint8_t control) {
    ws::parser_options o;
    o.deflate = (control & 1) != 0;
    o.client_no_context_takeover = (control & 2) != 0;
    o.max_message_size = (control & 4) ? 64 : 1024 * 1024;
    return o;
}

// Feeds `wire` in pieces of 1, 7 or 64 bytes, or whole.
ws::parse_error feed_split(ws::frame_parser& p, std::string_view wire, std::uint8_t control, checking_sink& sink) {
    static constexpr std::size_t steps[] = {1, 7, 64, std::string_view::npos};
    const std::size_t step = steps[(control >> 3) & 3];
    ws::parse_error first;
    while (!wire.empty()) {
        auto piece = wire.substr(0, step);
        wire.remove_prefix(piece.size());
        const std::size_t before = sink.messages;
        auto e = p.feed(piece, sink);
        if (first) {
            check(e.code == first.code);     // failed for good
            check(sink.messages == before);  // and nothing more delivered
        }
        if (e && !first) first = e;
    }
    return first;
}

void as_stream(std::uint8_t control, std::string_view bytes) {
    auto options = options_for(control);
    ws::frame_parser p(options);
    checking_sink sink;
    sink.max_size = options.max_message_size;
    auto e = feed_split(p, bytes, control, sink);
    if (e) check(allowed_close(e.code));
    if (sink.closed) check(p.closed());
}

void as_message(std::uint8_t control, std::string_view payload) {
    auto options = options_for(control);
    options.max_message_size = 1024 * 1024;
    const bool text = ws::is_valid_utf8(payload);
    std::string body(payload);
    if (options.deflate) {
        body.clear();
        ws::deflater d(15, 1);
        d.compress(payload, body, true);
    }
    // Fragments of up to 100 bytes, with a ping between the first two.
    const std::array<std::uint8_t, 4> mask{0xA1, 0xB2, 0xC3, 0xD4};
    std::string wire;
    std::size_t at = 0;
    do {
        const auto piece = std::string_view(body).substr(at, 100);
        const bool first = at == 0;
        at += piece.size();
        const bool fin = at >= body.size();
        wire += ws::encode_frame(first ? (text ? ws::opcode::text : ws::opcode::binary) : ws::opcode::continuation,
                                 piece, fin, first && options.deflate, mask);
        if (first && !fin) wire += ws::encode_frame(ws::opcode::ping, "p", true, false, mask);
    } while (at < body.size());
    ws::frame_parser p(options);
    checking_sink sink;
    sink.max_size = options.max_message_size;
    check(!feed_split(p, wire, control, sink));
    check(sink.messages == 1);
    check(sink.last == payload);
    check(sink.last_kind == (text ? ws::opcode::text : ws::opcode::binary));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t control = data[0];
    const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    as_stream(control, bytes);
    as_message(control, bytes);
    return 0;
}
