#pragma once
// One outbound message encoded once for many connections (a broadcast):
// the plain frame, and, when asked for, the frame compressed without
// context takeover, which every connection that negotiated
// server_no_context_takeover at the full window can take as it is. Each
// connection queues a reference (byte_stream::write_shared), never a copy.
#include <memory>
#include <string>
#include <string_view>

#include <m0/websocket/frame.hpp>

namespace m0::websocket {

class prepared_message {
public:
    // `kind` is text or binary. `compress`: also build the compressed frame
    // (zlib level `level`, window 15).
    prepared_message(opcode kind, std::string_view payload, bool compress = false, int level = 1);

    const std::shared_ptr<const std::string>& plain_frame() const noexcept { return plain_; }
    // Null unless built with `compress`.
    const std::shared_ptr<const std::string>& compressed_frame() const noexcept { return compressed_; }

private:
    std::shared_ptr<const std::string> plain_;
    std::shared_ptr<const std::string> compressed_;
};

}  // namespace m0::websocket
