#pragma once
// Content-Type of a served file, chosen by its extension.
#include <string_view>

namespace m0::static_files {

// The media type for `file_name` by its extension (case-insensitive);
// "application/octet-stream" when the extension is unknown or absent.
std::string_view mime_type_for(std::string_view file_name) noexcept;

}  // namespace m0::static_files
