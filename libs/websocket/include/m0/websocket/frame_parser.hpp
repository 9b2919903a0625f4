#pragma once
// The server's reader of client frames (RFC 6455 section 5): validates each
// frame header as soon as its first two bytes are in (reserved bits, unknown
// opcodes, unmasked frames, fragmented or oversized control frames,
// continuation out of sequence: 1002), unmasks and (with permessage-deflate)
// inflates payload as it arrives, checks text as UTF-8 across fragments
// (1007 at the first bad byte) and the message size (1009), and hands whole
// messages and control frames to a sink. Pure: no I/O, no timers.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <m0/websocket/deflate_codec.hpp>
#include <m0/websocket/frame.hpp>
#include <m0/websocket/utf8_validator.hpp>

namespace m0::websocket {

// What the parser delivers, in wire order (control frames may come between
// the fragments of a message; the message is delivered once whole).
class frame_sink {
public:
    virtual ~frame_sink() = default;
    // A whole text (valid UTF-8) or binary message, decompressed.
    virtual void on_message(opcode kind, std::string payload) = 0;
    virtual void on_ping(std::string_view payload) = 0;
    virtual void on_pong(std::string_view payload) = 0;
    // A valid close frame: `code` is close_code::no_status (1005) when the
    // frame had no payload. Nothing is parsed after it.
    virtual void on_close(std::uint16_t code, std::string_view reason) = 0;
};

struct parser_options {
    std::uint64_t max_message_size = 1024 * 1024;
    bool deflate = false;                     // permessage-deflate negotiated: RSV1 marks a compressed message
    int client_max_window_bits = 15;
    bool client_no_context_takeover = false;  // the inflater is freed after each message
};

// Why the connection must close: the code for the close frame and a short
// reason. code == 0: no error.
struct parse_error {
    std::uint16_t code = 0;
    std::string_view reason;
    explicit operator bool() const noexcept { return code != 0; }
};

class frame_parser {
public:
    explicit frame_parser(parser_options options);

    // Consumes all of `data`. The first error ends parsing for good (the
    // same error is returned again); after a close frame the rest is ignored.
    parse_error feed(std::string_view data, frame_sink& sink);
    // A close frame was read.
    bool closed() const noexcept { return state_ == state::done; }

private:
    enum class state { header, payload, done, failed };

    parse_error fail(std::uint16_t code, std::string_view reason);
    parse_error check_first_bytes();
    parse_error start_frame();
    parse_error take_payload(std::string_view chunk);
    parse_error end_frame(frame_sink& sink);
    parse_error end_control(frame_sink& sink);

    parser_options options_;
    state state_ = state::header;
    parse_error error_;

    // The frame being read.
    std::array<std::uint8_t, 14> head_{};
    std::size_t head_size_ = 0;
    std::size_t head_needed_ = 2;
    opcode op_ = opcode::continuation;
    bool fin_ = false;
    std::array<std::uint8_t, 4> mask_{};
    std::size_t mask_phase_ = 0;
    std::uint64_t remaining_ = 0;
    std::string control_;  // a control frame's payload (at most 125 bytes)

    // The message being assembled (across fragments).
    bool in_message_ = false;
    opcode message_kind_ = opcode::text;
    bool compressed_ = false;
    std::string message_;
    std::string scratch_;  // unmasked compressed bytes on their way to the inflater
    utf8_validator utf8_;
    std::unique_ptr<inflater> inflater_;
};

}  // namespace m0::websocket
