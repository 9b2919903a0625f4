#include <m0/static_files/byte_range.hpp>

#include <limits>
#include <optional>

#include <m0/static_files/ascii.hpp>

namespace m0::static_files {
namespace {

// Digits only, no sign, no overflow; nullopt otherwise.
std::optional<std::uint64_t> parse_u64(std::string_view s) noexcept {
    if (s.empty()) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        auto d = static_cast<std::uint64_t>(c - '0');
        if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
        v = v * 10 + d;
    }
    return v;
}

}  // namespace

range_outcome parse_byte_range(std::string_view header, std::uint64_t size, byte_range& range) noexcept {
    auto eq = header.find('=');
    if (eq == std::string_view::npos) return range_outcome::ignore;
    if (!ascii_iequals(trim_ows(header.substr(0, eq)), "bytes")) return range_outcome::ignore;
    auto spec = trim_ows(header.substr(eq + 1));
    if (spec.find(',') != std::string_view::npos) return range_outcome::ignore;
    auto dash = spec.find('-');
    if (dash == std::string_view::npos) return range_outcome::ignore;
    auto first_text = trim_ows(spec.substr(0, dash));
    auto last_text = trim_ows(spec.substr(dash + 1));

    if (first_text.empty()) {  // suffix: the last n bytes
        auto n = parse_u64(last_text);
        if (!n) return range_outcome::ignore;
        if (*n == 0 || size == 0) return range_outcome::unsatisfiable;
        range.first = *n >= size ? 0 : size - *n;
        range.last = size - 1;
        return range_outcome::satisfiable;
    }
    auto first = parse_u64(first_text);
    if (!first) return range_outcome::ignore;
    std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
    if (!last_text.empty()) {
        auto parsed = parse_u64(last_text);
        if (!parsed || *parsed < *first) return range_outcome::ignore;
        last = *parsed;
    }
    if (*first >= size) return range_outcome::unsatisfiable;
    range.first = *first;
    range.last = last >= size ? size - 1 : last;
    return range_outcome::satisfiable;
}

}  // namespace m0::static_files
