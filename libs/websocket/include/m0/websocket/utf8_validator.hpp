#pragma once
// Incremental UTF-8 validation (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF) over a text message that arrives in pieces, so an
// invalid prefix is refused as soon as its first bad byte is seen rather
// than when the message ends.
#include <cstdint>
#include <string_view>

namespace m0::websocket {

class utf8_validator {
public:
    // False as soon as `bytes` cannot continue a valid sequence; the
    // validator then stays failed.
    bool feed(std::string_view bytes) noexcept;
    // True when everything fed so far is valid and ends on a character
    // boundary (a whole message).
    bool complete() const noexcept { return !failed_ && needed_ == 0; }
    void reset() noexcept { *this = utf8_validator{}; }

private:
    std::uint8_t needed_ = 0;  // continuation bytes still expected
    std::uint8_t low_ = 0x80;  // allowed range of the next continuation byte
    std::uint8_t high_ = 0xBF;
    bool failed_ = false;
};

// Whole-string check (close reasons).
bool is_valid_utf8(std::string_view bytes) noexcept;

}  // namespace m0::websocket
