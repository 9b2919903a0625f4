#pragma once
// Validators of a static file (ETag, Last-Modified) and the request
// preconditions that use them (RFC 9110 section 13).
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include <sys/stat.h>

namespace m0::static_files {

// A strong ETag from size and modification time (to the nanosecond):
// "\"<mtime s>-<mtime ns>-<size>\"" in hex.
std::string make_etag(const struct stat& st);

// If-None-Match: true when `header` is "*" or lists `etag` (weak comparison,
// so W/"x" matches "x").
bool etag_list_matches(std::string_view header, std::string_view etag) noexcept;

// If-Range: true when a Range request may be honoured — the header is absent,
// is our ETag (strong comparison), or is exactly our Last-Modified date.
bool if_range_allows(std::optional<std::string_view> header, std::string_view etag, std::time_t mtime);

}  // namespace m0::static_files
