#pragma once
// RFC 6455 framing: opcodes, close codes, and the encoding of outbound
// frames. A server's frames are never masked; the optional mask key exists
// for clients (tests, fuzz seeds) that need to write what a browser sends.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace m0::websocket {

enum class opcode : std::uint8_t {
    continuation = 0x0,
    text = 0x1,
    binary = 0x2,
    close = 0x8,
    ping = 0x9,
    pong = 0xA,
};

constexpr bool is_control(opcode op) noexcept { return (static_cast<std::uint8_t>(op) & 0x8) != 0; }

// Close codes m0 sends (RFC 6455 section 7.4.1).
namespace close_code {
constexpr std::uint16_t normal = 1000;
constexpr std::uint16_t going_away = 1001;
constexpr std::uint16_t protocol_error = 1002;
constexpr std::uint16_t unsupported_data = 1003;
constexpr std::uint16_t no_status = 1005;        // never on the wire
constexpr std::uint16_t invalid_payload = 1007;  // text that is not UTF-8
constexpr std::uint16_t policy_violation = 1008;
constexpr std::uint16_t message_too_big = 1009;
constexpr std::uint16_t internal_error = 1011;
constexpr std::uint16_t try_again_later = 1013;
}  // namespace close_code

// Largest payload of a control frame (ping, pong, close).
constexpr std::size_t max_control_payload = 125;

// True for a code a peer may send in a close frame: 1000-1003, 1007-1011,
// and 3000-4999 (registered and private use); 1004-1006, 1015 and
// everything else are refused with 1002.
bool is_valid_close_code(std::uint16_t code) noexcept;

// Frame header (2 to 14 bytes) for a payload of `length` bytes.
std::string encode_frame_header(opcode op, std::uint64_t length, bool fin = true, bool rsv1 = false,
                                std::optional<std::array<std::uint8_t, 4>> mask = std::nullopt);

// A whole frame: header and payload (masked with `mask` when given).
std::string encode_frame(opcode op, std::string_view payload, bool fin = true, bool rsv1 = false,
                         std::optional<std::array<std::uint8_t, 4>> mask = std::nullopt);

// A close frame carrying `code` and `reason`; the reason is cut to fit the
// 125-byte control limit (at a UTF-8 character boundary).
std::string encode_close_frame(std::uint16_t code, std::string_view reason,
                               std::optional<std::array<std::uint8_t, 4>> mask = std::nullopt);

// XORs `data` in place with the 4-byte `mask`, starting at mask offset `phase`
// (0-3); returns the phase after the last byte.
std::size_t apply_mask(char* data, std::size_t size, const std::array<std::uint8_t, 4>& mask,
                       std::size_t phase) noexcept;

}  // namespace m0::websocket
