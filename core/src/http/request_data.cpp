#include "http/request_data.hpp"

#include <boost/asio/post.hpp>

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

void post_whole_body(boost::asio::io_context& io, const std::string& body, bool& taken, body_handler fn) {
    std::string chunk = taken ? std::string() : body;
    taken = true;
    boost::asio::post(io, [fn = std::move(fn), chunk = std::move(chunk)]() mutable { fn({}, std::move(chunk), true); });
}

}  // namespace m0::http::detail
