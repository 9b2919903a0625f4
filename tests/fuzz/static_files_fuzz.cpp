// libFuzzer target over the parsers of libs/static-files that read what a
// client sends: the request path below a mount, Range, If-None-Match,
// If-Range and HTTP dates (If-Modified-Since).
//
// Input: 8 bytes (a file size and a modification time, little-endian
// 32-bit each), then up to four fields separated by '\n': the raw path, a
// Range value, a validator header value (If-None-Match / If-Range), a date.
// Each parser's result is checked against what it promises (no path outside
// the mount, a range inside the file, a date that formats back to itself,
// our own ETag always matching); a broken promise aborts, as do crashes and
// sanitizer reports.
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>

#include <m0/static_files/byte_range.hpp>
#include <m0/static_files/cache_validators.hpp>
#include <m0/static_files/http_date.hpp>
#include <m0/static_files/request_path.hpp>

namespace {

namespace sf = m0::static_files;

void check(bool ok) {
    if (!ok) std::abort();
}

std::uint32_t u32(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}

// The next '\n'-separated field of `rest` (all of it for the last).
std::string_view field(std::string_view& rest) {
    const auto end = rest.find('\n');
    const auto f = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    return f;
}

void fuzz_path(std::string_view raw) {
    const auto rel = sf::make_relative_path(raw);
    if (!rel) return;
    const std::string& p = rel->path;
    // Relative, normalized, and never above the mount's root.
    check(p.empty() || (p.front() != '/' && p.back() != '/'));
    check(p.find('\0') == std::string::npos && p.find("//") == std::string::npos);
    if (!p.empty()) {
        for (std::size_t start = 0; start <= p.size();) {
            const auto end = std::min(p.find('/', start), p.size());
            const auto segment = std::string_view(p).substr(start, end - start);
            check(!segment.empty() && segment != "." && segment != "..");
            start = end + 1;
        }
    }
    // A path without escapes decodes to itself: normalizing it again changes nothing.
    if (p.find('%') == std::string::npos) {
        const auto again = sf::make_relative_path(p);
        check(again && again->path == p);
    }
}

// "bytes=a-b" with plain digits and nothing else, or nullopt.
bool plain_range(std::string_view h, std::uint64_t& a, std::uint64_t& b) {
    if (h.substr(0, 6) != "bytes=") return false;
    h.remove_prefix(6);
    const auto dash = h.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash + 1 == h.size()) return false;
    auto digits = [](std::string_view s, std::uint64_t& v) {
        if (s.size() > 18) return false;
        v = 0;
        for (char c : s) {
            if (c < '0' || c > '9') return false;
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        return true;
    };
    return digits(h.substr(0, dash), a) && digits(h.substr(dash + 1), b);
}

void fuzz_range(std::string_view header, std::uint64_t size) {
    sf::byte_range r;
    const auto outcome = sf::parse_byte_range(header, size, r);
    if (outcome == sf::range_outcome::satisfiable) check(size > 0 && r.first <= r.last && r.last < size);
    std::uint64_t a, b;
    if (plain_range(header, a, b) && a <= b) {
        // The plain form is understood exactly: inside the file, clipped at its end.
        if (a < size) check(outcome == sf::range_outcome::satisfiable && r.first == a && r.last == std::min(b, size - 1));
        else check(outcome == sf::range_outcome::unsatisfiable);
    }
}

void fuzz_validators(std::string_view header, std::uint32_t size, std::uint32_t mtime) {
    struct stat st {};
    st.st_size = size;
    st.st_mtim.tv_sec = mtime;
    st.st_mtim.tv_nsec = size % 1'000'000'000;
    const std::string etag = sf::make_etag(st);
    (void)sf::etag_list_matches(header, etag);
    // Our own tag matches, alone, weak, or in a list; "*" matches anything.
    check(sf::etag_list_matches(etag, etag));
    check(sf::etag_list_matches("W/" + etag, etag));
    check(sf::etag_list_matches(std::string(header.substr(0, 64)) + ", " + etag, etag) ||
          header.find('"') != std::string_view::npos);
    check(sf::etag_list_matches("*", etag));
    // If-Range: absent, our strong tag or our exact date allow the range.
    (void)sf::if_range_allows(header, etag, static_cast<std::time_t>(mtime));
    check(sf::if_range_allows(std::nullopt, etag, mtime));
    check(sf::if_range_allows(etag, etag, mtime));
    check(!sf::if_range_allows("W/" + etag, etag, mtime));
    check(sf::if_range_allows(sf::format_http_date(mtime), etag, mtime));
}

void fuzz_date(std::string_view text, std::uint32_t mtime) {
    if (const auto t = sf::parse_http_date(text)) {
        // What was read is a date that formats and reads back the same.
        const auto again = sf::parse_http_date(sf::format_http_date(*t));
        check(again && *again == *t);
    }
    const auto formatted = sf::format_http_date(mtime);
    const auto back = sf::parse_http_date(formatted);
    check(back && *back == static_cast<std::time_t>(mtime));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 8) return 0;
    const std::uint32_t file_size = u32(data), mtime = u32(data + 4);
    std::string_view rest(reinterpret_cast<const char*>(data + 8), size - 8);
    const auto path = field(rest);
    const auto range = field(rest);
    const auto validator = field(rest);
    const auto date = field(rest);
    fuzz_path(path);
    fuzz_range(range, file_size);
    fuzz_validators(validator, file_size, mtime);
    fuzz_date(date, mtime);
    return 0;
}
