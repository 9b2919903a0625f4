#include <m0/websocket/utf8_validator.hpp>

namespace m0::websocket {

bool utf8_validator::feed(std::string_view bytes) noexcept {
    if (failed_) return false;
    for (char ch : bytes) {
        const auto c = static_cast<std::uint8_t>(ch);
        if (needed_ != 0) {
            if (c < low_ || c > high_) return !(failed_ = true);
            --needed_;
            low_ = 0x80;
            high_ = 0xBF;
            continue;
        }
        if (c < 0x80) continue;
        // The lead byte sets how many continuation bytes follow and narrows
        // the first one's range, which rules out overlong forms (E0, F0),
        // surrogates (ED) and code points past U+10FFFF (F4).
        if (c >= 0xC2 && c <= 0xDF) {
            needed_ = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            needed_ = 2;
            if (c == 0xE0) low_ = 0xA0;
            if (c == 0xED) high_ = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            needed_ = 3;
            if (c == 0xF0) low_ = 0x90;
            if (c == 0xF4) high_ = 0x8F;
        } else {
            return !(failed_ = true);
        }
    }
    return true;
}

bool is_valid_utf8(std::string_view bytes) noexcept {
    utf8_validator v;
    return v.feed(bytes) && v.complete();
}

}  // namespace m0::websocket
