#pragma once
// The server's opening handshake (RFC 6455 section 4.2): checks a request
// and says either how to answer 101 or how to refuse it (400, or 426 with
// Sec-WebSocket-Version when the version or the upgrade itself is missing).
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <m0/http.hpp>
#include <m0/websocket/deflate_negotiation.hpp>

namespace m0::websocket {

// Picks one of the client's subprotocols (Sec-WebSocket-Protocol, in the
// client's order), or none. The default picks the first of the server's
// list that the client offered.
using subprotocol_selector =
    std::function<std::optional<std::string>(const std::vector<std::string_view>& offered)>;

struct handshake_options {
    std::vector<std::string> subprotocols;  // the server's, in preference order
    subprotocol_selector select_subprotocol;  // when set, used instead of `subprotocols`
    deflate_options deflate;
};

struct handshake_result {
    bool accepted = false;
    // Refused: the status (400 or 426), its headers and a text/plain body
    // saying what was wrong. Accepted: the 101's headers (Upgrade,
    // Sec-WebSocket-Accept, and the chosen protocol and extensions).
    unsigned status = 0;
    std::vector<http::response_header> headers;
    std::string body;

    std::string subprotocol;                // chosen; empty for none
    std::optional<std::string> origin;      // the Origin header, for the application to judge
    std::optional<deflate_params> deflate;  // permessage-deflate accepted
};

handshake_result check_handshake(const http::request& req, const handshake_options& options);

// Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(SHA-1(key + GUID)).
std::string accept_key(std::string_view key);

// True when `req` asks for a WebSocket upgrade at all (Upgrade: websocket);
// a route may then answer it as one and anything else as plain HTTP.
bool is_upgrade_request(const http::request& req);

}  // namespace m0::websocket
