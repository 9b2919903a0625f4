#include <m0/websocket/frame.hpp>

#include <algorithm>
#include <cstring>

namespace m0::websocket {

bool is_valid_close_code(std::uint16_t code) noexcept {
    if (code >= 1000 && code <= 1003) return true;
    if (code >= 1007 && code <= 1011) return true;
    return code >= 3000 && code <= 4999;
}

std::string encode_frame_header(opcode op, std::uint64_t length, bool fin, bool rsv1,
                                std::optional<std::array<std::uint8_t, 4>> mask) {
    std::string out;
    out.reserve(14);
    out.push_back(static_cast<char>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | static_cast<std::uint8_t>(op)));
    const std::uint8_t mask_bit = mask ? 0x80 : 0;
    if (length < 126) {
        out.push_back(static_cast<char>(mask_bit | length));
    } else if (length <= 0xFFFF) {
        out.push_back(static_cast<char>(mask_bit | 126));
        out.push_back(static_cast<char>(length >> 8));
        out.push_back(static_cast<char>(length & 0xFF));
    } else {
        out.push_back(static_cast<char>(mask_bit | 127));
        for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((length >> shift) & 0xFF));
    }
    if (mask) out.append(reinterpret_cast<const char*>(mask->data()), 4);
    return out;
}

std::string encode_frame(opcode op, std::string_view payload, bool fin, bool rsv1,
                         std::optional<std::array<std::uint8_t, 4>> mask) {
    std::string out = encode_frame_header(op, payload.size(), fin, rsv1, mask);
    const std::size_t head = out.size();
    out.append(payload);
    if (mask) apply_mask(out.data() + head, payload.size(), *mask, 0);
    return out;
}

std::string encode_close_frame(std::uint16_t code, std::string_view reason,
                               std::optional<std::array<std::uint8_t, 4>> mask) {
    std::size_t keep = std::min(reason.size(), max_control_payload - 2);
    // Never cut inside a multi-byte character: back up over continuation bytes.
    if (keep < reason.size())
        while (keep > 0 && (static_cast<std::uint8_t>(reason[keep]) & 0xC0) == 0x80) --keep;
    std::string payload;
    payload.push_back(static_cast<char>(code >> 8));
    payload.push_back(static_cast<char>(code & 0xFF));
    payload.append(reason.substr(0, keep));
    return encode_frame(opcode::close, payload, true, false, mask);
}

std::size_t apply_mask(char* data, std::size_t size, const std::array<std::uint8_t, 4>& mask,
                       std::size_t phase) noexcept {
    std::size_t i = 0;
    // Bring the phase to 0, then XOR 8 bytes at a time (payloads are mostly
    // large relative to this loop's setup).
    for (; i < size && phase != 0; ++i, phase = (phase + 1) & 3) data[i] ^= static_cast<char>(mask[phase]);
    if (size - i >= 8) {
        std::uint64_t wide;
        std::uint8_t pattern[8];
        for (int k = 0; k < 8; ++k) pattern[k] = mask[k & 3];
        std::memcpy(&wide, pattern, 8);
        for (; size - i >= 8; i += 8) {
            std::uint64_t chunk;
            std::memcpy(&chunk, data + i, 8);
            chunk ^= wide;
            std::memcpy(data + i, &chunk, 8);
        }
    }
    for (; i < size; ++i, phase = (phase + 1) & 3) data[i] ^= static_cast<char>(mask[phase]);
    return phase;
}

}  // namespace m0::websocket
