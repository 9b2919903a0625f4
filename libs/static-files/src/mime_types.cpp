#include <m0/static_files/mime_types.hpp>

#include <array>
#include <utility>

#include <m0/static_files/ascii.hpp>

namespace m0::static_files {
namespace {

// Small and sorted by nothing in particular: a linear scan over ~40 short
// entries costs less than hashing the extension, and it is only done once per
// static response.
constexpr std::array<std::pair<std::string_view, std::string_view>, 40> mime_table{{
    {"html", "text/html"},
    {"htm", "text/html"},
    {"css", "text/css"},
    {"js", "text/javascript"},
    {"mjs", "text/javascript"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"txt", "text/plain"},
    {"md", "text/markdown"},
    {"csv", "text/csv"},
    {"xml", "application/xml"},
    {"rss", "application/rss+xml"},
    {"atom", "application/atom+xml"},
    {"webmanifest", "application/manifest+json"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"svg", "image/svg+xml"},
    {"ico", "image/x-icon"},
    {"webp", "image/webp"},
    {"avif", "image/avif"},
    {"bmp", "image/bmp"},
    {"wasm", "application/wasm"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"ttf", "font/ttf"},
    {"otf", "font/otf"},
    {"eot", "application/vnd.ms-fontobject"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"tar", "application/x-tar"},
    {"mp3", "audio/mpeg"},
    {"ogg", "audio/ogg"},
    {"wav", "audio/wav"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"yaml", "application/yaml"},
    {"yml", "application/yaml"},
}};

}  // namespace

std::string_view mime_type_for(std::string_view file_name) noexcept {
    constexpr std::string_view fallback = "application/octet-stream";
    auto slash = file_name.rfind('/');
    if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
    auto dot = file_name.rfind('.');
    // A leading dot is a hidden file's name, not an extension.
    if (dot == std::string_view::npos || dot == 0) return fallback;
    auto ext = file_name.substr(dot + 1);
    for (const auto& [known, type] : mime_table) {
        if (ascii_iequals(ext, known)) return type;
    }
    return fallback;
}

}  // namespace m0::static_files
