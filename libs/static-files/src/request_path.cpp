#include <m0/static_files/request_path.hpp>

#include <m0/http.hpp>

namespace m0::static_files {
namespace {

bool has_encoded_separator(std::string_view raw) noexcept {
    for (std::size_t i = 0; i + 2 < raw.size(); ++i) {
        if (raw[i] != '%') continue;
        char hi = raw[i + 1];
        char lo = static_cast<char>(raw[i + 2] | 0x20);  // lower-case the hex letter
        if ((hi == '2' && lo == 'f') || (hi == '5' && lo == 'c')) return true;
    }
    return false;
}

}  // namespace

std::optional<relative_path> make_relative_path(std::string_view raw) {
    if (has_encoded_separator(raw)) return std::nullopt;
    auto decoded = http::percent_decode(raw);
    if (!decoded || decoded->find('\0') != std::string::npos) return std::nullopt;

    relative_path out;
    out.trailing_slash = decoded->empty() || decoded->back() == '/';
    std::string_view rest(*decoded);
    while (!rest.empty()) {
        auto slash = rest.find('/');
        auto segment = rest.substr(0, slash);
        rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
        if (segment.empty() || segment == ".") continue;
        if (segment == "..") return std::nullopt;
        if (!out.path.empty()) out.path.push_back('/');
        out.path.append(segment);
    }
    return out;
}

}  // namespace m0::static_files
