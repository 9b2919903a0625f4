#pragma once
// HTTP dates (RFC 9110 section 5.6.7) for Last-Modified and If-Modified-Since.
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace m0::static_files {

// "Sun, 06 Nov 1994 08:49:37 GMT" (IMF-fixdate).
std::string format_http_date(std::time_t t);

// Accepts IMF-fixdate and the two obsolete forms recipients must still read
// (RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" and asctime
// "Sun Nov  6 08:49:37 1994"); nullopt for anything else.
std::optional<std::time_t> parse_http_date(std::string_view text);

}  // namespace m0::static_files
