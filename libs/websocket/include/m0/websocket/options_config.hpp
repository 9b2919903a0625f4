#pragma once
// The WebSocket keys of a route (`websocket:` map) as validated
// websocket_options, so every frontend that serves WebSocket accepts the
// same keys (documented in libs/websocket/README.md).
#include <string_view>
#include <vector>

#include <m0/websocket/accept.hpp>

namespace m0 {
class config_node;
}

namespace m0::websocket {

// The keys this parser reads; a caller that adds its own (`handler`) passes
// them in `extra_keys` so unknown keys are still refused with a suggestion.
// Throws m0::config_error located at the offending node.
websocket_options parse_websocket_options(const config_node& node, const std::vector<std::string>& extra_keys = {});

}  // namespace m0::websocket
