#include <m0/static_files/cache_validators.hpp>

#include <cstdio>

#include <m0/static_files/ascii.hpp>
#include <m0/static_files/http_date.hpp>

namespace m0::static_files {
std::string make_etag(const struct stat& st) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "\"%llx-%lx-%llx\"", static_cast<unsigned long long>(st.st_mtim.tv_sec),
                  static_cast<unsigned long>(st.st_mtim.tv_nsec), static_cast<unsigned long long>(st.st_size));
    return buf;
}

bool etag_list_matches(std::string_view header, std::string_view etag) noexcept {
    while (!header.empty()) {
        auto comma = header.find(',');
        auto candidate = trim_ows(header.substr(0, comma));
        header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
        if (candidate == "*") return true;
        if (candidate.substr(0, 2) == "W/") candidate.remove_prefix(2);
        if (candidate == etag) return true;
    }
    return false;
}

bool if_range_allows(std::optional<std::string_view> header, std::string_view etag, std::time_t mtime) {
    if (!header) return true;
    auto value = trim_ows(*header);
    if (value.empty()) return false;
    if (value.front() == '"') return value == etag;
    if (value.substr(0, 2) == "W/") return false;  // weak tags never validate a range
    auto date = parse_http_date(value);
    return date && *date == mtime;
}

}  // namespace m0::static_files
