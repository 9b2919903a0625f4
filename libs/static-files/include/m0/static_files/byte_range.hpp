#pragma once
// Parsing of a `Range: bytes=...` request header (RFC 9110 section 14).
#include <cstdint>
#include <string_view>

namespace m0::static_files {

struct byte_range {
    std::uint64_t first = 0;  // inclusive
    std::uint64_t last = 0;   // inclusive
    std::uint64_t length() const noexcept { return last - first + 1; }
};

enum class range_outcome {
    // Serve the whole representation with 200: the header is malformed, uses
    // another unit, or asks for several ranges (multipart/byteranges is not
    // produced; RFC 9110 lets a server ignore Range).
    ignore,
    satisfiable,    // 206 with `range` set
    unsatisfiable,  // 416 with "Content-Range: bytes */size"
};

// Interprets one Range header value against a representation of `size`
// bytes: "bytes=a-b", "bytes=a-" or "bytes=-n". On `satisfiable` the range
// is clipped to the representation.
range_outcome parse_byte_range(std::string_view header, std::uint64_t size, byte_range& range) noexcept;

}  // namespace m0::static_files
