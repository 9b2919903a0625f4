// libFuzzer target over the HTTP/1.1 engine: the request parser and the
// connection state machine, its timers, drain and force-close.
//
// Input: a control byte, a timing byte, then the bytes a client sends. The
// control byte picks the limits (engine defaults or small ones, so the limit
// paths are reachable with short inputs) and how the stream is split into
// reads. The timing byte (bit 0) shortens every timeout (header, body,
// write, keep-alive) to a millisecond and then says when they may fire:
// before any of the first pieces (bits 1-4, one per piece), while the client
// stops reading (bit 5: the write timeout), after the last byte (bit 7: the
// keep-alive timeout); bit 6 drains the connection before the force-close.
//
// Each input runs twice:
//  1. through request_parser alone, the way a connection feeds it
//     (consumed bytes dropped, pipelined requests one after the other),
//     checking the parse's invariants;
//  2. through a real session of the engine, over one end of a socketpair
//     handed to http::serve() by a listener of our own, with a handler whose
//     answer depends on the path (inline, deferred, streamed, aborted,
//     dropped, bodiless, large...). The io_context is polled, never run with
//     waits; a timer fires only where the timing byte lets the clock pass
//     its deadline (engine_harness.hpp, shared with http2_fuzz).
// Crashes, leaks, sanitizer reports and an answer that does not parse as
// HTTP/1.1 responses (response_oracle) fail the run.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <m0/http.hpp>
#include <m0/log.hpp>

#include "engine_harness.hpp"
#include "http1/char_class.hpp"
#include "http1/request_parser.hpp"

namespace {

using m0::fuzz::check;
using m0::fuzz::splitter;
using m0::http::detail::parse_status;
using m0::http::detail::request_data;
using m0::http::detail::request_parser;

m0::http_limits limits_for(std::uint8_t control) {
    m0::http_limits limits;
    if (control & 1) {
        limits.max_request_line = 64;
        limits.max_header_size = 64;
        limits.max_header_count = 4;
        limits.max_header_bytes = 192;
        limits.max_body_size = 32;
    }
    return limits;
}

bool inside(std::string_view v, const std::string& owner) {
    return v.empty() || (v.data() >= owner.data() && v.data() + v.size() <= owner.data() + owner.size());
}

void check_request(const request_data& d, const m0::http_limits& limits) {
    const auto& r = d.req;
    check(!r.method.empty() && inside(r.method, d.head));
    for (char c : r.method) check(m0::http::detail::is(c, m0::http::detail::cc_tchar));
    check(!r.target.empty() && inside(r.target, d.head));
    // Bytes >= 0x80 pass through; controls, SP and DEL never reach a handler.
    for (char c : r.target) check(static_cast<unsigned char>(c) > 0x20 && c != 0x7f);
    check(r.version == 10 || r.version == 11);
    check(r.headers.size() <= limits.max_header_count);
    check(d.head.size() <= limits.max_header_bytes);
    check(r.body.size() <= limits.max_body_size);
    for (const auto& h : r.headers) {
        check(!h.name.empty() && inside(h.name, d.head) && inside(h.value, d.head));
        for (char c : h.value) check(c != '\r' && c != '\n' && c != '\0');
    }
}

// Pass 1: the parser alone, fed like a connection feeds it.
void fuzz_parser(std::uint8_t control, const char* data, std::size_t size) {
    const auto limits = limits_for(control);
    request_parser parser(limits);
    request_data out;
    splitter split(control);
    std::string buffer;
    std::size_t sent = 0;
    bool started = false;
    for (;;) {
        if (!started) {
            out.clear();
            parser.start(out);
            started = true;
        }
        // An allocation of exactly the unconsumed bytes, so that reading one
        // byte past them is a sanitizer report (a std::string has slack).
        const std::unique_ptr<char[]> exact(new char[buffer.size()]);
        std::memcpy(exact.get(), buffer.data(), buffer.size());
        std::size_t used = 0;
        const auto st = parser.feed(exact.get(), buffer.size(), used);
        check(used <= buffer.size());
        buffer.erase(0, used);
        if (st == parse_status::error) {
            const unsigned s = parser.error_status();
            check(s == 400 || s == 413 || s == 414 || s == 431 || s == 501 || s == 505);
            check(!parser.error_reason().empty());
            return;  // the connection closes
        }
        if (st == parse_status::head_done) {
            check(parser.head_done() && parser.body_pending());
            continue;
        }
        if (st == parse_status::complete) {
            check_request(out, limits);
            parser.stop();
            started = false;
            continue;
        }
        if (sent == size) return;
        const std::size_t n = split.next(size - sent);
        buffer.append(data + sent, n);
        sent += n;
    }
}

// Pass 2: a session of the engine over a socketpair.

// Answers by the path's second byte, to reach every response path.
class fuzz_handler final : public m0::http::handler {
public:
    void on_request(m0::http::exchange_ptr ex) override { m0::fuzz::answer_by_kind(ex, m0::fuzz::kind_of(ex->req())); }
};

// The answer must parse, whole, as HTTP/1.1 responses one after the other
// (status line, field syntax, unambiguous framing); only the last may be cut
// short, by an abort, a force-close or the capture cap. Echoed request bytes,
// a body longer than its framing or a field with CR/LF all fail. Responses to
// HEAD have no body whatever their framing says, and the oracle does not know
// which requests were HEAD: with "HEAD" in the input it checks only the first
// response's head.
class response_oracle {
public:
    explicit response_oracle(std::string_view in) : in_(in) {}

    void check_all(bool follow_bodies) {
        while (pos_ < in_.size() && next_response(follow_bodies)) {
        }
    }

private:
    // The next line without its CRLF; nullopt when the stream ends first.
    std::optional<std::string_view> line() {
        const auto end = in_.find("\r\n", pos_);
        if (end == std::string_view::npos) return std::nullopt;
        const auto l = in_.substr(pos_, end - pos_);
        pos_ = end + 2;
        return l;
    }

    bool take(std::size_t n) {
        if (in_.size() - pos_ < n) return false;
        pos_ += n;
        return true;
    }

    static bool hex_digits(std::string_view s) {
        if (s.empty() || s.size() > 8) return false;
        for (char c : s)
            if (!m0::http::detail::is(c, m0::http::detail::cc_hex)) return false;
        return true;
    }

    // Reads one response; false when the stream ended inside it (or when
    // the rest is not followed).
    bool next_response(bool follow_bodies) {
        const std::string_view prefix = "HTTP/1.1 ";
        const auto rest = in_.substr(pos_, prefix.size());
        check(prefix.substr(0, rest.size()) == rest);
        const auto status_line = line();
        if (!status_line) return false;
        check(status_line->size() >= 13 && (*status_line)[12] == ' ');
        const auto code = status_line->substr(9, 3);
        for (char c : code) check(c >= '0' && c <= '9');
        for (char c : status_line->substr(13)) check(m0::http::detail::is(c, m0::http::detail::cc_field_value));
        const int status = std::stoi(std::string(code));

        std::size_t lengths = 0, codings = 0;
        std::string_view length, coding;
        for (;;) {
            const auto field = line();
            if (!field) return false;
            if (field->empty()) break;
            const auto colon = field->find(':');
            check(colon != std::string_view::npos && colon > 0);
            for (char c : field->substr(0, colon)) check(m0::http::detail::is(c, m0::http::detail::cc_tchar));
            auto value = field->substr(colon + 1);
            for (char c : value) check(m0::http::detail::is(c, m0::http::detail::cc_field_value));
            while (!value.empty() && m0::http::detail::is_ows(value.front())) value.remove_prefix(1);
            while (!value.empty() && m0::http::detail::is_ows(value.back())) value.remove_suffix(1);
            const auto name = field->substr(0, colon);
            if (m0::http::detail::token_equals(name, "content-length")) ++lengths, length = value;
            if (m0::http::detail::token_equals(name, "transfer-encoding")) ++codings, coding = value;
        }
        // RFC 9112 6.1-6.3, RFC 9110 8.6: one framing, none on 1xx and 204.
        check(lengths <= 1 && !(lengths && codings));
        if (status < 200 || status == 204) check(lengths == 0 && codings == 0);
        if (status < 200 || status == 204 || status == 304) return true;
        if (!follow_bodies) return false;
        if (codings) {
            check(coding.size() >= 7 && m0::http::detail::token_equals(coding.substr(coding.size() - 7), "chunked"));
            for (;;) {
                const auto size_line = line();
                if (!size_line) return false;
                const auto digits = size_line->substr(0, size_line->find(';'));
                check(hex_digits(digits));
                const auto size = std::stoul(std::string(digits), nullptr, 16);
                if (size == 0) break;
                if (!take(size)) return false;
                const auto end = line();
                if (!end) {
                    check(in_.substr(pos_) == "" || in_.substr(pos_) == "\r");  // cut, not overrun
                    return false;
                }
                check(end->empty());
            }
            for (;;) {  // trailer section
                const auto trailer = line();
                if (!trailer) return false;
                if (trailer->empty()) return true;
            }
        }
        if (lengths) {
            check(!length.empty() && length.size() <= 12 &&
                  length.find_first_not_of("0123456789") == std::string_view::npos);
            return take(std::stoul(std::string(length)));
        }
        pos_ = in_.size();  // close-delimited: the rest is the body
        return false;
    }

    std::string_view in_;
    std::size_t pos_ = 0;
};

void fuzz_session(std::uint8_t control, std::uint8_t timing, const char* data, std::size_t size) {
    m0::fuzz::session_setup setup;
    setup.limits = limits_for(control);
    fuzz_handler handler;
    const std::string received = m0::fuzz::run_session(setup, handler, control, timing, std::string_view(data, size));
    response_oracle(received).check_all(std::string_view(data, size).find("HEAD") == std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // One log line per rejected request would flood the fuzzer's output.
    m0::log::set_level(m0::log::level::warning);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::uint8_t control = data[0], timing = data[1];
    const char* stream = reinterpret_cast<const char*>(data + 2);
    fuzz_parser(control, stream, size - 2);
    fuzz_session(control, timing, stream, size - 2);
    return 0;
}
