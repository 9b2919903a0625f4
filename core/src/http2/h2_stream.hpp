#pragma once
// One HTTP/2 stream as the engine keeps it: the request as it arrives, its
// body (whole, or pulled by the handler), and the response on its way out.
// Owned by the connection while nghttp2 has it open, and by its exchange
// while the handler holds it: whichever lets go last frees it.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <m0/http.hpp>

#include "http/request_data.hpp"
#include "http2/stream_output.hpp"

namespace m0::http2 {

struct h2_stream {
    using clock = std::chrono::steady_clock;

    explicit h2_stream(std::int32_t stream_id) : id(stream_id) {}

    const std::int32_t id;
    std::unique_ptr<http::detail::request_data> data;

    // Request head, as HPACK decodes it: every field appended to data->head,
    // its place noted here; the request's views are made once it is whole.
    struct field_at {
        std::uint32_t name, name_size, value, value_size;
    };
    std::vector<field_at> fields;
    std::optional<field_at> method, path, authority, scheme, protocol;
    std::string cookies;                  // cookie fields, joined with "; "
    std::uint32_t header_bytes = 0;       // decoded, as SETTINGS_MAX_HEADER_LIST_SIZE counts them
    std::uint32_t header_count = 0;
    const char* head_too_large = nullptr;  // why its head is refused with 431 (null: it is not)
    bool head_done = false;

    // Request body.
    bool body_done = false;     // END_STREAM came
    bool streamed = false;      // the handler pulls it (handler::stream_body)
    bool continue_owed = false;  // expect: 100-continue, answered on the first pull
    std::uint64_t body_received = 0;
    std::string inbound;        // streamed: received, not pulled yet (bounded by the stream window)
    struct body_pull {
        std::size_t max = 0;
        http::body_handler fn;
    };
    body_pull pull;
    clock::time_point last_input{};

    // WebSocket over HTTP/2 (RFC 8441): an extended CONNECT, shown to the
    // handler as an HTTP/1.1-style handshake; after upgrade() the stream's
    // DATA are the WebSocket's bytes both ways.
    bool websocket = false;
    bool upgraded = false;
    http::byte_stream::read_handler stream_read;

    // Exchange.
    bool dispatched = false;  // handed to the handler
    bool released = false;    // the handler let its exchange go
    bool waiting = false;     // head (and body) complete, held back by the running-handler limit
    bool gone = false;        // reset by the client, or the connection ended
    bool closed = false;      // nghttp2 closed the stream
    clock::time_point dispatched_at{};

    // Response.
    bool begun = false;        // HEADERS submitted
    bool finished = false;     // the handler ended (or aborted) it
    bool ended = false;        // no more body after what is queued
    bool send_body = false;
    bool deferred = false;     // nghttp2 waits for body bytes (resume_data when some come)
    std::optional<std::uint64_t> remaining;  // Content-Length still owed
    unsigned status = 0;
    std::uint64_t body_bytes = 0;
    std::vector<http::response_header> trailers;
    stream_output out;
    clock::time_point last_output{};
    std::vector<std::string> captured_headers;  // for the access log
    http::request_outcome outcome = http::request_outcome::ok;

    std::vector<std::function<void()>> gone_fns;
    std::vector<std::function<void()>> drain_fns;
    struct drain_waiter {
        std::size_t below;
        std::function<void()> fn;
    };
    std::vector<drain_waiter> drain_waiters;
};

}  // namespace m0::http2
