#include "http/date_cache.hpp"

#include <time.h>

namespace m0::http::detail {

std::string_view date_cache::get() noexcept {
    // CLOCK_REALTIME_COARSE is a vDSO read: cheap enough for every response,
    // so the string is refreshed on use and an idle worker never wakes for it.
    timespec ts{};
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec != second_) {
        second_ = ts.tv_sec;
        std::tm tm{};
        gmtime_r(&second_, &tm);
        size_ = std::strftime(text_, sizeof text_, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    }
    return {text_, size_};
}

}  // namespace m0::http::detail
