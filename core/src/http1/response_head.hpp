#pragma once
// Serialises a response head (status line, the engine's own headers, the
// handler's headers) and chunk framing into an output buffer.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <m0/http.hpp>

#include "http/response_rules.hpp"

namespace m0::http::detail {

enum class body_framing {
    none,     // no body: HEAD without a known length, 1xx, 204, 304
    length,   // Content-Length
    chunked,  // Transfer-Encoding: chunked (HTTP/1.1 only)
    eof,      // delimited by closing the connection (HTTP/1.0)
};

enum class connection_token { none, close, keep_alive, upgrade };

struct head_spec {
    unsigned status = 200;
    const std::vector<response_header>* headers = nullptr;
    body_framing framing = body_framing::length;
    std::uint64_t content_length = 0;
    connection_token connection = connection_token::none;
};

void append_response_head(std::string& out, const head_spec& spec, std::string_view date);

// "1a2b\r\n" for a chunk of `size` bytes (size > 0).
void append_chunk_header(std::string& out, std::uint64_t size);

inline constexpr std::string_view last_chunk = "0\r\n\r\n";
inline constexpr std::string_view crlf = "\r\n";

}  // namespace m0::http::detail
