#include <m0/http.hpp>

namespace m0::http {

std::optional<std::string_view> request::header(std::string_view name) const {
    for (const auto& h : headers)
        if (ascii_iequals(h.name, name)) return h.value;
    return std::nullopt;
}

}  // namespace m0::http
