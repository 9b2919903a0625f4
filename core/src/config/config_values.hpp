#pragma once
// Scalar syntaxes shared by every config getter: integers, numbers, booleans,
// durations and byte sizes, parsed strictly (the whole text or nothing) and
// formatted back canonically for the effective configuration.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace m0::config_detail {

std::optional<std::int64_t> parse_integer(std::string_view text);
std::optional<double> parse_number(std::string_view text);
// true/false, yes/no, on/off, any case.
std::optional<bool> parse_boolean(std::string_view text);
// "30s", "250ms", "2m", "10us", "5ns", "1h"; a bare (possibly fractional) number is seconds.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);
// "512", "64k", "1m", "2g" (powers of 1024; "kb", "mb", "gb" and a "b" suffix too).
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

// The largest unit that represents the value exactly: "30s", "250ms", "1h".
std::string format_duration(std::chrono::nanoseconds value);
// "1g", "64k", or a plain byte count.
std::string format_byte_size(std::uint64_t value);
std::string format_number(double value);

}  // namespace m0::config_detail
