#pragma once
// The value of the Date response header, formatted at most once a second.
// One per worker (reactor thread); not thread-safe by design.
#include <ctime>
#include <string_view>

namespace m0::http::detail {

class date_cache {
public:
    // "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 IMF-fixdate) for the
    // current second.
    std::string_view get() noexcept;

private:
    std::time_t second_ = -1;
    char text_[32] = {};
    std::size_t size_ = 0;
};

}  // namespace m0::http::detail
