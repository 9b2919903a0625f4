#pragma once
// The buffers a WSGI response is assembled in (its header list and a body
// small enough to be copied into the connection's write buffer), kept by the
// reactor thread between requests. The executor thread then fills buffers
// that already have room, and nothing it allocated is freed on the reactor:
// both a malloc per request and a free into another thread's arena are
// saved on the hot path.
#include <cstddef>
#include <string>
#include <vector>

#include <m0/http.hpp>

namespace m0::wsgi {

struct response_buffers {
    // Entries left from an earlier response, not cleared so that their
    // strings keep their capacity: parse_headers overwrites them.
    std::vector<http::response_header> spare_headers;
    std::string body;  // empty; keeps its capacity

    // Bodies up to this size are copied into the connection's write buffer
    // by the engine whichever way they are handed over, so they are lent
    // (respond_borrowed) and the buffer is kept; larger ones are moved.
    static constexpr std::size_t lent_body_max = 4096;

    // The calling thread's cached buffers, or new empty ones.
    static response_buffers take();
    // Keeps `b` for the calling thread's next take(); drops it when the
    // cache is full or `b` grew past what is worth keeping.
    static void give_back(response_buffers&& b) noexcept;
};

}  // namespace m0::wsgi
