#include <m0/static_files/http_date.hpp>

#include <array>
#include <cstdio>
#include <cstring>

namespace m0::static_files {
namespace {

constexpr std::array<const char*, 7> day_names{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<const char*, 12> month_names{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int month_index(std::string_view m) noexcept {
    for (int i = 0; i < 12; ++i) {
        if (m == month_names[static_cast<std::size_t>(i)]) return i;
    }
    return -1;
}

// Parses exactly `n` digits at `s[pos]`; -1 otherwise.
int digits(std::string_view s, std::size_t pos, std::size_t n) noexcept {
    if (pos + n > s.size()) return -1;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        char c = s[pos + i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

// "HH:MM:SS" at pos.
bool parse_clock(std::string_view s, std::size_t pos, std::tm& tm) noexcept {
    if (pos + 8 > s.size() || s[pos + 2] != ':' || s[pos + 5] != ':') return false;
    tm.tm_hour = digits(s, pos, 2);
    tm.tm_min = digits(s, pos + 3, 2);
    tm.tm_sec = digits(s, pos + 6, 2);
    return tm.tm_hour >= 0 && tm.tm_hour < 24 && tm.tm_min >= 0 && tm.tm_min < 60 && tm.tm_sec >= 0 &&
           tm.tm_sec <= 60;
}

std::optional<std::time_t> finish(std::tm& tm) noexcept {
    if (tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_mon < 0) return std::nullopt;
    return timegm(&tm);
}

}  // namespace

std::string format_http_date(std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", day_names[static_cast<std::size_t>(tm.tm_wday)],
                  tm.tm_mday, month_names[static_cast<std::size_t>(tm.tm_mon)], tm.tm_year + 1900, tm.tm_hour,
                  tm.tm_min, tm.tm_sec);
    return buf;
}

std::optional<std::time_t> parse_http_date(std::string_view s) {
    std::tm tm{};
    // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" (29 characters).
    if (s.size() == 29 && s[3] == ',' && s[4] == ' ' && s[7] == ' ' && s[11] == ' ' && s[16] == ' ' &&
        s.substr(25) == " GMT") {
        tm.tm_mday = digits(s, 5, 2);
        tm.tm_mon = month_index(s.substr(8, 3));
        int year = digits(s, 12, 4);
        if (year < 0 || !parse_clock(s, 17, tm)) return std::nullopt;
        tm.tm_year = year - 1900;
        return finish(tm);
    }
    // asctime: "Sun Nov  6 08:49:37 1994" (24 characters, day padded with a space).
    if (s.size() == 24 && s[3] == ' ' && s[7] == ' ' && s[10] == ' ' && s[19] == ' ') {
        tm.tm_mon = month_index(s.substr(4, 3));
        tm.tm_mday = s[8] == ' ' ? digits(s, 9, 1) : digits(s, 8, 2);
        int year = digits(s, 20, 4);
        if (year < 0 || !parse_clock(s, 11, tm)) return std::nullopt;
        tm.tm_year = year - 1900;
        return finish(tm);
    }
    // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" (day name of variable length).
    auto comma = s.find(", ");
    if (comma != std::string_view::npos && s.size() == comma + 24) {
        auto p = comma + 2;
        if (s[p + 2] != '-' || s[p + 6] != '-' || s[p + 9] != ' ' || s.substr(p + 18) != " GMT")
            return std::nullopt;
        tm.tm_mday = digits(s, p, 2);
        tm.tm_mon = month_index(s.substr(p + 3, 3));
        int yy = digits(s, p + 7, 2);
        if (yy < 0 || !parse_clock(s, p + 10, tm)) return std::nullopt;
        // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
        tm.tm_year = yy < 70 ? yy + 100 : yy;
        return finish(tm);
    }
    return std::nullopt;
}

}  // namespace m0::static_files
