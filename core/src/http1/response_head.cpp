#include "http1/response_head.hpp"

#include <charconv>

#include <m0/http.hpp>

#include "http/response_rules.hpp"

namespace m0::http::detail {

namespace {

void append_number(std::string& out, std::uint64_t v, int base = 10) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v, base);
    out.append(buf, r.ptr);
}

}  // namespace

void append_response_head(std::string& out, const head_spec& spec, std::string_view date) {
    out.append("HTTP/1.1 ");
    append_number(out, spec.status);
    out.push_back(' ');
    out.append(reason_phrase(spec.status));
    out.append("\r\nServer: m0\r\nDate: ");
    out.append(date);
    out.append("\r\n");
    switch (spec.framing) {
    case body_framing::length:
        out.append("Content-Length: ");
        append_number(out, spec.content_length);
        out.append("\r\n");
        break;
    case body_framing::chunked: out.append("Transfer-Encoding: chunked\r\n"); break;
    case body_framing::none:
    case body_framing::eof: break;
    }
    switch (spec.connection) {
    case connection_token::close: out.append("Connection: close\r\n"); break;
    case connection_token::keep_alive: out.append("Connection: keep-alive\r\n"); break;
    case connection_token::upgrade: out.append("Connection: upgrade\r\n"); break;
    case connection_token::none: break;
    }
    if (spec.headers) {
        for (const auto& h : *spec.headers) {
            const auto value = sendable_field(h, false);
            if (!value) continue;
            out.append(h.name);
            out.append(": ");
            out.append(*value);
            out.append("\r\n");
        }
    }
    out.append("\r\n");
}

void append_chunk_header(std::string& out, std::uint64_t size) {
    append_number(out, size, 16);
    out.append("\r\n");
}

}  // namespace m0::http::detail
