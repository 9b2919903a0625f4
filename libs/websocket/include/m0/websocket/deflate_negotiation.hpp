#pragma once
// permessage-deflate (RFC 7692) negotiation: the server's side of reading a
// client's Sec-WebSocket-Extensions offers and answering the first one it
// can accept. What m0 picks by default, and why, is in libs/websocket/README.md.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace m0::websocket {

// Server policy (the `permessage_deflate` keys).
struct deflate_options {
    bool enabled = true;
    // Compress every message on its own, with a deflate stream shared by all
    // connections of a reactor thread: no compressor memory per connection,
    // and one compressed frame can go to many receivers.
    bool server_no_context_takeover = true;
    // Ask clients to compress every message on its own, so that the
    // inflater (and its window) exists only while a message arrives.
    bool client_no_context_takeover = false;
    int server_max_window_bits = 15;  // 9..15: our compressor's window at most
    int client_max_window_bits = 15;  // 9..15: asked of a client that allows it
    int level = 1;                    // zlib level 0..9 (1: cheapest CPU per byte)
};

// The accepted parameters of one connection.
struct deflate_params {
    bool server_no_context_takeover = false;
    bool client_no_context_takeover = false;
    int server_max_window_bits = 15;  // our frames must decode with this window (8: m0 sends plain frames)
    int client_max_window_bits = 15;  // the client's frames' window at most
    int level = 1;
    // The Sec-WebSocket-Extensions value of the 101 response.
    std::string response;
};

// Every header value of Sec-WebSocket-Extensions (they form one list).
// The first permessage-deflate offer whose parameters are valid wins; offers
// with an unknown or repeated parameter or a bad value are declined (RFC
// 7692 section 5), as are other extensions. nullopt: no compression.
std::optional<deflate_params> negotiate_deflate(const std::vector<std::string_view>& header_values,
                                                const deflate_options& options);

}  // namespace m0::websocket
