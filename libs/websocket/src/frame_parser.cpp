#include <m0/websocket/frame_parser.hpp>

#include <algorithm>
#include <utility>

namespace m0::websocket {

frame_parser::frame_parser(parser_options options) : options_(options) {}

parse_error frame_parser::fail(std::uint16_t code, std::string_view reason) {
    state_ = state::failed;
    error_ = {code, reason};
    message_ = std::string();
    inflater_.reset();
    return error_;
}

parse_error frame_parser::feed(std::string_view data, frame_sink& sink) {
    while (state_ == state::header || state_ == state::payload) {
        if (state_ == state::header) {
            if (data.empty()) break;
            const std::size_t take = std::min(head_needed_ - head_size_, data.size());
            std::copy_n(data.data(), take, head_.data() + head_size_);
            head_size_ += take;
            data.remove_prefix(take);
            if (head_size_ < head_needed_) break;
            if (head_size_ == 2) {
                // Fail fast: everything but the length is known from two bytes.
                if (auto e = check_first_bytes()) return e;
                const std::uint8_t len7 = head_[1] & 0x7F;
                head_needed_ = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4;
                continue;
            }
            if (auto e = start_frame()) return e;
            if (remaining_ == 0)
                if (auto e = end_frame(sink)) return e;
            continue;
        }
        if (data.empty()) break;
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, data.size()));
        if (auto e = take_payload(data.substr(0, take))) return e;
        data.remove_prefix(take);
        remaining_ -= take;
        if (remaining_ == 0)
            if (auto e = end_frame(sink)) return e;
    }
    return error_;
}

parse_error frame_parser::check_first_bytes() {
    const std::uint8_t b0 = head_[0], b1 = head_[1];
    fin_ = (b0 & 0x80) != 0;
    const bool rsv1 = (b0 & 0x40) != 0;
    op_ = static_cast<opcode>(b0 & 0x0F);
    if ((b0 & 0x30) != 0) return fail(close_code::protocol_error, "reserved bits set");
    switch (op_) {
    case opcode::continuation:
        if (!in_message_) return fail(close_code::protocol_error, "continuation frame without a message");
        if (rsv1) return fail(close_code::protocol_error, "RSV1 on a continuation frame");
        break;
    case opcode::text:
    case opcode::binary:
        if (in_message_) return fail(close_code::protocol_error, "new message inside a fragmented message");
        if (rsv1 && !options_.deflate) return fail(close_code::protocol_error, "RSV1 set without permessage-deflate");
        break;
    case opcode::close:
    case opcode::ping:
    case opcode::pong:
        if (rsv1) return fail(close_code::protocol_error, "RSV1 on a control frame");
        if (!fin_) return fail(close_code::protocol_error, "fragmented control frame");
        if ((b1 & 0x7F) > max_control_payload) return fail(close_code::protocol_error, "control frame over 125 bytes");
        break;
    default:
        return fail(close_code::protocol_error, "reserved opcode");
    }
    if ((b1 & 0x80) == 0) return fail(close_code::protocol_error, "client frame not masked");
    return {};
}

parse_error frame_parser::start_frame() {
    const std::uint8_t len7 = head_[1] & 0x7F;
    std::size_t at = 2;
    std::uint64_t length = len7;
    if (len7 == 126) {
        length = (std::uint64_t{head_[2]} << 8) | head_[3];
        at = 4;
    } else if (len7 == 127) {
        length = 0;
        for (std::size_t i = 2; i < 10; ++i) length = (length << 8) | head_[i];
        at = 10;
        if (length >> 63) return fail(close_code::protocol_error, "payload length with the top bit set");
    }
    std::copy_n(head_.data() + at, 4, mask_.data());
    mask_phase_ = 0;
    remaining_ = length;
    head_size_ = 0;
    head_needed_ = 2;
    state_ = state::payload;
    if (is_control(op_)) {
        control_.clear();
        return {};
    }
    if (op_ != opcode::continuation) {
        in_message_ = true;
        message_kind_ = op_;
        compressed_ = (head_[0] & 0x40) != 0;
        utf8_.reset();
        if (compressed_ && !inflater_) inflater_ = std::make_unique<inflater>(options_.client_max_window_bits);
    }
    // Uncompressed, the size is known before a byte of payload is read.
    if (!compressed_ && length > options_.max_message_size - std::min(options_.max_message_size, std::uint64_t{message_.size()}))
        return fail(close_code::message_too_big, "message too big");
    return {};
}

parse_error frame_parser::take_payload(std::string_view chunk) {
    if (is_control(op_)) {
        const std::size_t old = control_.size();
        control_.append(chunk);
        mask_phase_ = apply_mask(control_.data() + old, chunk.size(), mask_, mask_phase_);
        return {};
    }
    std::size_t old = message_.size();
    if (!compressed_) {
        message_.append(chunk);
        mask_phase_ = apply_mask(message_.data() + old, chunk.size(), mask_, mask_phase_);
    } else {
        scratch_.assign(chunk);
        mask_phase_ = apply_mask(scratch_.data(), scratch_.size(), mask_, mask_phase_);
        auto r = inflater_->feed(scratch_, message_, options_.max_message_size);
        if (r == inflater::result::too_big) return fail(close_code::message_too_big, "message too big");
        if (r == inflater::result::bad_data) return fail(close_code::invalid_payload, "bad deflate data");
    }
    if (message_kind_ == opcode::text && !utf8_.feed(std::string_view(message_).substr(old)))
        return fail(close_code::invalid_payload, "text message is not UTF-8");
    return {};
}

parse_error frame_parser::end_frame(frame_sink& sink) {
    state_ = state::header;
    if (is_control(op_)) return end_control(sink);
    if (!fin_) return {};
    if (compressed_) {
        const std::size_t old = message_.size();
        auto r = inflater_->finish(message_, options_.max_message_size, options_.client_no_context_takeover);
        if (r == inflater::result::too_big) return fail(close_code::message_too_big, "message too big");
        if (r == inflater::result::bad_data) return fail(close_code::invalid_payload, "bad deflate data");
        if (message_kind_ == opcode::text && !utf8_.feed(std::string_view(message_).substr(old)))
            return fail(close_code::invalid_payload, "text message is not UTF-8");
        // Without context takeover nothing links messages: free the window.
        if (options_.client_no_context_takeover) inflater_.reset();
    }
    if (message_kind_ == opcode::text && !utf8_.complete())
        return fail(close_code::invalid_payload, "text message is not UTF-8");
    in_message_ = false;
    compressed_ = false;
    sink.on_message(message_kind_, std::exchange(message_, std::string()));
    return error_;
}

parse_error frame_parser::end_control(frame_sink& sink) {
    if (op_ == opcode::ping) {
        sink.on_ping(control_);
        return error_;
    }
    if (op_ == opcode::pong) {
        sink.on_pong(control_);
        return error_;
    }
    if (control_.size() == 1) return fail(close_code::protocol_error, "close frame with a one-byte payload");
    std::uint16_t code = close_code::no_status;
    std::string_view reason;
    if (control_.size() >= 2) {
        code = static_cast<std::uint16_t>((static_cast<std::uint8_t>(control_[0]) << 8) |
                                          static_cast<std::uint8_t>(control_[1]));
        if (!is_valid_close_code(code)) return fail(close_code::protocol_error, "invalid close code");
        reason = std::string_view(control_).substr(2);
        if (!is_valid_utf8(reason)) return fail(close_code::invalid_payload, "close reason is not UTF-8");
    }
    state_ = state::done;
    message_ = std::string();
    inflater_.reset();
    sink.on_close(code, reason);
    return error_;
}

}  // namespace m0::websocket
