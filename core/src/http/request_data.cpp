#include "http/request_data.hpp"

namespace m0::http::detail {

namespace {
// A body buffer above this is freed after use instead of kept for the
// next request on the connection.
constexpr std::size_t max_retained_body = 64 * 1024;
}  // namespace

void request_data::clear() noexcept {
    req.method = {};
    req.target = {};
    req.path = {};
    req.query = {};
    req.script_name = {};
    req.version = 11;
    req.headers.clear();
    if (req.body.capacity() > max_retained_body)
        std::string().swap(req.body);
    else
        req.body.clear();
    req.keep_alive = true;
    head.clear();
    is_head = false;
}

}  // namespace m0::http::detail
