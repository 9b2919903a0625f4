#include "config/config_values.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <numeric>
#include <vector>

#include <m0/config.hpp>

namespace m0::config_detail {
namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// Splits "250ms" into the number "250" and the lower-cased unit "ms".
std::pair<std::string_view, std::string> split_unit(std::string_view text) {
    text = trim(text);
    const auto unit_at = text.find_first_not_of("0123456789.");
    if (unit_at == std::string_view::npos) return {text, ""};
    return {trim(text.substr(0, unit_at)), lower(trim(text.substr(unit_at)))};
}

struct unit {
    std::string_view name;
    std::uint64_t scale;
};

}  // namespace

std::optional<std::int64_t> parse_integer(std::string_view text) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<double> parse_number(std::string_view text) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

std::optional<bool> parse_boolean(std::string_view text) {
    const auto word = lower(text);
    if (word == "true" || word == "yes" || word == "on") return true;
    if (word == "false" || word == "no" || word == "off") return false;
    return std::nullopt;
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
    static constexpr std::array<unit, 7> units{{{"", 1'000'000'000},
                                                {"s", 1'000'000'000},
                                                {"ms", 1'000'000},
                                                {"us", 1'000},
                                                {"ns", 1},
                                                {"m", 60'000'000'000},
                                                {"h", 3'600'000'000'000}}};
    const auto [number, suffix] = split_unit(text);
    const auto it = std::find_if(units.begin(), units.end(), [&](const unit& u) { return u.name == suffix; });
    const auto value = parse_number(number);
    if (it == units.end() || !value || *value < 0) return std::nullopt;
    const double ns = std::round(*value * static_cast<double>(it->scale));
    // About 292 years: the range of std::chrono::nanoseconds.
    if (ns >= 9.2e18) return std::nullopt;
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
    static constexpr std::array<unit, 8> units{{{"", 1},
                                                {"b", 1},
                                                {"k", 1ull << 10},
                                                {"kb", 1ull << 10},
                                                {"m", 1ull << 20},
                                                {"mb", 1ull << 20},
                                                {"g", 1ull << 30},
                                                {"gb", 1ull << 30}}};
    const auto [number, suffix] = split_unit(text);
    const auto it = std::find_if(units.begin(), units.end(), [&](const unit& u) { return u.name == suffix; });
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (it == units.end() || number.empty() || ec != std::errc{} || end != number.data() + number.size())
        return std::nullopt;
    if (value > UINT64_MAX / it->scale) return std::nullopt;
    return value * it->scale;
}

std::string format_duration(std::chrono::nanoseconds value) {
    static constexpr std::array<unit, 6> units{{{"h", 3'600'000'000'000},
                                                {"m", 60'000'000'000},
                                                {"s", 1'000'000'000},
                                                {"ms", 1'000'000},
                                                {"us", 1'000},
                                                {"ns", 1}}};
    const auto ns = static_cast<std::uint64_t>(value.count());
    if (ns == 0) return "0s";
    const auto it = std::find_if(units.begin(), units.end(), [&](const unit& u) { return ns % u.scale == 0; });
    return std::to_string(ns / it->scale) + std::string(it->name);
}

std::string format_byte_size(std::uint64_t value) {
    static constexpr std::array<unit, 3> units{{{"g", 1ull << 30}, {"m", 1ull << 20}, {"k", 1ull << 10}}};
    for (const auto& u : units)
        if (value != 0 && value % u.scale == 0) return std::to_string(value / u.scale) + std::string(u.name);
    return std::to_string(value);
}

std::string format_number(double value) {
    std::array<char, 64> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    return std::string(buffer.data(), end);
}

}  // namespace m0::config_detail

namespace m0 {
namespace {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions),
// case-insensitive: "thraeds" is one step from "threads".
std::size_t edit_distance(std::string_view a, std::string_view b) {
    const auto la = config_detail::lower(a), lb = config_detail::lower(b);
    std::vector<std::vector<std::size_t>> d(la.size() + 1, std::vector<std::size_t>(lb.size() + 1));
    for (std::size_t i = 0; i <= la.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= lb.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= la.size(); ++i)
        for (std::size_t j = 1; j <= lb.size(); ++j) {
            const std::size_t cost = la[i - 1] == lb[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && la[i - 1] == lb[j - 2] && la[i - 2] == lb[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[la.size()][lb.size()];
}

}  // namespace

std::optional<std::string> nearest_key(std::string_view key, const std::vector<std::string>& candidates) {
    // Close enough to be a typo: one edit for short keys, up to a third of a long one.
    const std::size_t limit = std::max<std::size_t>(1, key.size() / 3);
    std::optional<std::string> best;
    std::size_t best_distance = limit + 1;
    for (const auto& candidate : candidates) {
        const auto distance = edit_distance(key, candidate);
        if (distance < best_distance && distance < candidate.size()) {
            best = candidate;
            best_distance = distance;
        }
    }
    return best;
}

}  // namespace m0
