#pragma once
// Storage behind one parsed request: the request's views point into `head`
// (a copy of the request head) and its body. Recycled per connection so a
// keep-alive connection stops allocating after its first few requests.
#include <string>

#include <m0/http.hpp>

namespace m0::http::detail {

struct request_data {
    request req;
    std::string head;
    bool is_head = false;  // method HEAD: the response carries no body

    // Empties the request but keeps the capacity of its buffers. A body
    // buffer that grew large is released rather than kept per connection.
    void clear() noexcept;
};

// read_body on an exchange whose body was read whole (either engine): one
// piece holding all of it, then empty ones (`taken` remembers), each posted
// to `io`.
void post_whole_body(boost::asio::io_context& io, const std::string& body, bool& taken, body_handler fn);

}  // namespace m0::http::detail
