#pragma once
// What a response obeys whichever engine writes it.
namespace m0::http::detail {

// Statuses whose responses never carry a body (RFC 9110 6.4.1).
constexpr bool status_has_body(unsigned status) noexcept {
    return status >= 200 && status != 204 && status != 304;
}

}  // namespace m0::http::detail
