#include "http1/request_parser.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>

#include "http1/char_class.hpp"

namespace m0::http::detail {

namespace {
constexpr std::string_view root_path = "/";

const char* skip_ows(const char* p, const char* e) noexcept {
    while (p < e && is_ows(*p)) ++p;
    return p;
}

const char* trim_ows_back(const char* b, const char* e) noexcept {
    while (e > b && is_ows(e[-1])) --e;
    return e;
}

const char* scan(const char* p, const char* e, char_class cls) noexcept {
    while (p < e && is(*p, cls)) ++p;
    return p;
}

// The end of the field-value bytes (VCHAR / obs-text / SP / HTAB) from p.
// Field values are most of a head's bytes, so eight are checked at a time
// for a byte below 0x20 or 0x7f (SWAR "has less than" / "has zero"), and
// only a word holding one, such as a HTAB, is looked at byte by byte.
const char* scan_field_value(const char* p, const char* e) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    while (e - p >= 8) {
        std::uint64_t x;
        std::memcpy(&x, p, 8);
        const std::uint64_t below_space = (x - ones * 0x20) & ~x & highs;
        const std::uint64_t y = x ^ (ones * 0x7f);
        const std::uint64_t del = (y - ones) & ~y & highs;
        if ((below_space | del) != 0) break;
        p += 8;
    }
    return scan(p, e, cc_field_value);
}

// Calls fn(element) for each non-empty element of a comma-separated list
// (RFC 9110 5.6.1: empty elements are ignored), with OWS trimmed.
template <class Fn>
void for_each_element(std::string_view list, Fn&& fn) {
    const char* p = list.data();
    const char* const e = p + list.size();
    while (p < e) {
        const char* comma = static_cast<const char*>(std::memchr(p, ',', static_cast<std::size_t>(e - p)));
        const char* end = comma ? comma : e;
        const char* b = skip_ows(p, end);
        const char* t = trim_ows_back(b, end);
        if (b < t) fn(std::string_view(b, static_cast<std::size_t>(t - b)));
        p = comma ? comma + 1 : e;
    }
}

// Scans target bytes of class `cls` and well-formed percent-escapes.
const char* scan_target(const char* p, const char* e, char_class cls) noexcept {
    for (;;) {
        p = scan(p, e, cls);
        if (p == e || *p != '%') return p;
        if (e - p < 3 || !is(p[1], cc_hex) || !is(p[2], cc_hex)) return p;
        p += 3;
    }
}

// path [ "?" query ] of a request-target; reports where the path ends.
bool valid_path_query(const char* p, const char* e, const char*& path_end) noexcept {
    p = scan_target(p, e, cc_path);
    path_end = p;
    if (p == e) return true;
    if (*p != '?') return false;
    return scan_target(p + 1, e, cc_query) == e;
}

// uri-host [ ":" port ] (RFC 9110 7.2); the port is required for CONNECT's
// authority-form (RFC 9112 3.2.3).
bool valid_authority(const char* p, const char* e, bool port_required) noexcept {
    if (p < e && *p == '[') {
        const char* close = static_cast<const char*>(std::memchr(p, ']', static_cast<std::size_t>(e - p)));
        if (!close || close == p + 1) return false;
        for (const char* q = p + 1; q < close; ++q)
            if (!is(*q, cc_reg_name) && *q != ':') return false;
        p = close + 1;
    } else {
        for (;;) {
            p = scan(p, e, cc_reg_name);
            if (p == e || *p != '%') break;
            if (e - p < 3 || !is(p[1], cc_hex) || !is(p[2], cc_hex)) return false;
            p += 3;
        }
    }
    if (p == e) return !port_required;
    if (*p != ':') return false;
    ++p;
    if (port_required && p == e) return false;
    for (; p < e; ++p)
        if (*p < '0' || *p > '9') return false;
    return true;
}

constexpr bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
constexpr bool is_scheme_char(char c) noexcept {
    return is_alpha(c) || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

// quoted-string starting at p (on the opening quote); returns the position
// after the closing quote, or nullptr.
const char* skip_quoted_string(const char* p, const char* e) noexcept {
    ++p;
    while (p < e) {
        const char c = *p;
        if (c == '"') return p + 1;
        if (c == '\\') {
            if (e - p < 2 || !(is(p[1], cc_field_value))) return nullptr;  // HTAB / SP / VCHAR / obs-text
            p += 2;
        } else if (is(c, cc_qdtext)) {
            ++p;
        } else {
            return nullptr;
        }
    }
    return nullptr;
}

// Fields that RFC 9110 6.5.1 keeps out of a trailer section because they
// must be known before the content: message framing, routing, request
// modifiers, authentication, response control data and how to process the
// content. Its predecessor names them (RFC 7230 4.1.2 with RFC 7231 5.1-5.4
// and 7.1, RFC 7235, RFC 6265), and this is that list. A client or proxy
// that sends one as a trailer disagrees with m0 about the message, so the
// request is refused rather than the field silently dropped. Lower case, as
// token_equals wants.
constexpr std::string_view forbidden_trailers[] = {
    "content-length", "transfer-encoding", "trailer",                             // framing
    "host",                                                                       // routing
    "cache-control", "expect", "max-forwards", "pragma", "range", "te",           // controls
    "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range",
    "accept", "accept-charset", "accept-encoding", "accept-language",             // negotiation
    "authorization", "proxy-authorization", "www-authenticate", "proxy-authenticate",
    "cookie", "set-cookie",                                                       // authentication
    "age", "date", "expires", "location", "retry-after", "vary", "warning",       // response control
    "content-encoding", "content-type", "content-range",                          // content processing
};

// `name` is a validated token (no control bytes), as token_equals requires.
bool forbidden_as_trailer(std::string_view name) noexcept {
    return std::any_of(std::begin(forbidden_trailers), std::end(forbidden_trailers),
                       [name](std::string_view f) { return token_equals(name, f); });
}

}  // namespace

void request_parser::start(request_data& out) {
    out_ = &out;
    sink_ = &out.req.body;
    sink_max_ = std::numeric_limits<std::size_t>::max();
    body_received_ = 0;
    state_ = state::head;
    error_status_ = 0;
    error_reason_ = {};
    got_some_ = false;
    line_start_ = 0;
    head_start_ = 0;
    request_line_done_ = false;
    has_query_ = false;
    version_ = 11;
    fields_.clear();
    content_length_count_ = 0;
    content_length_ = 0;
    te_present_ = false;
    te_chunked_seen_ = false;
    te_chunked_last_ = false;
    te_unknown_ = false;
    te_malformed_ = false;
    host_count_ = 0;
    conn_close_ = false;
    conn_keep_alive_ = false;
    expect_continue_ = false;
    remaining_ = 0;
    crlf_seen_ = 0;
    head_bytes_ = 0;
    trailer_bytes_ = 0;
    trailer_count_ = 0;
}

void request_parser::stop() noexcept {
    out_ = nullptr;
    state_ = state::head;
    got_some_ = false;
    expect_continue_ = false;
}

parse_status request_parser::fail(unsigned status, std::string_view reason) noexcept {
    error_status_ = status;
    error_reason_ = reason;
    state_ = state::failed;
    return parse_status::error;
}

parse_status request_parser::feed(const char* data, std::size_t size, std::size_t& consumed) {
    consumed = 0;
    if (size == 0) return parse_status::need_more;
    got_some_ = true;
    if (state_ == state::head) return feed_head(data, size, consumed);
    return feed_body(data, size, consumed);
}

// ------------------------------------------------------------------- head

// 414 when the target makes the line too long; a method that does not even
// end within the limit is no method at all (400).
unsigned request_parser::request_line_too_long(const char* line, std::size_t size) const noexcept {
    const std::size_t look = std::min<std::size_t>(size, limits_->max_request_line);
    return std::memchr(line, ' ', look) ? 414 : 400;
}

parse_status request_parser::feed_head(const char* data, std::size_t size, std::size_t& consumed) {
    std::size_t pos = line_start_;
    while (pos < size) {
        const void* hit = std::memchr(data + pos, '\n', size - pos);
        if (!hit) break;
        const auto lf = static_cast<std::size_t>(static_cast<const char*>(hit) - data);
        // RFC 9112 2.2: a bare LF may be accepted; m0 refuses it, since a
        // front proxy that disagrees would see other requests than m0.
        if (lf == pos || data[lf - 1] != '\r') return fail(400, "bare LF in the head");
        const std::size_t end = lf - 1;  // the line's CR
        if (!request_line_done_) {
            if (end == pos) {
                // RFC 9112 2.2: empty lines before the request line are ignored.
                head_start_ = lf + 1;
            } else {
                if (!parse_request_line(data + pos, end - pos)) return parse_status::error;
                request_line_done_ = true;
                method_off_ += static_cast<std::uint32_t>(pos);
                target_off_ += static_cast<std::uint32_t>(pos);
            }
        } else if (end == pos) {
            return finish_head(data, lf + 1, consumed);
        } else if (!parse_field_line(data, pos, end)) {
            return parse_status::error;
        }
        pos = lf + 1;
        if (pos - head_start_ > limits_->max_header_bytes) return fail(431, "header section too large");
    }
    line_start_ = pos;
    // A line still arriving is held to its limit now, not once it is whole.
    const std::size_t partial = size - pos;
    if (!request_line_done_) {
        if (partial > limits_->max_request_line) {
            const unsigned status = request_line_too_long(data + pos, partial);
            return fail(status, status == 414 ? "request line too long" : "method too long");
        }
    } else if (partial > limits_->max_header_size) {
        return fail(431, "header field too large");
    }
    if (size - head_start_ > limits_->max_header_bytes) return fail(431, "header section too large");
    return parse_status::need_more;
}

// request-line = method SP request-target SP HTTP-version (RFC 9112 3),
// exactly one SP each. Offsets are stored relative to the line.
bool request_parser::parse_request_line(const char* line, std::size_t size) {
    const char* const e = line + size;
    const char* m = scan(line, e, cc_tchar);
    if (m == line || m == e || *m != ' ') {
        fail(400, "invalid method");
        return false;
    }
    if (size > limits_->max_request_line) {
        const unsigned status = request_line_too_long(line, size);
        fail(status, status == 414 ? "request line too long" : "method too long");
        return false;
    }
    // "HTTP/" DIGIT "." DIGIT, case-sensitive (RFC 9112 2.3).
    const char* t = m + 1;
    constexpr std::size_t version_size = 8;
    if (e - t < static_cast<std::ptrdiff_t>(version_size + 2) || e[-9] != ' ') {
        fail(400, "malformed request line");
        return false;
    }
    const char* v = e - version_size;
    if (std::memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' || v[7] < '0' || v[7] > '9') {
        fail(400, "malformed HTTP version");
        return false;
    }
    if (v[5] != '1') {
        fail(505, "unsupported HTTP version");
        return false;
    }
    // RFC 9110 2.5: a higher 1.x minor is answered as the highest we have.
    version_ = v[7] == '0' ? 10 : 11;
    method_off_ = 0;
    method_len_ = static_cast<std::uint32_t>(m - line);
    target_off_ = static_cast<std::uint32_t>(t - line);
    target_len_ = static_cast<std::uint32_t>((e - 9) - t);
    return parse_target(t, e - 9);
}

// RFC 9112 3.2: origin-form, absolute-form, authority-form (CONNECT only),
// asterisk-form (OPTIONS only). Path and query are located within the target.
bool request_parser::parse_target(const char* t, const char* e) {
    const std::string_view method(t - 1 - method_len_, method_len_);
    const char* path_end = nullptr;
    has_query_ = false;
    if (method == "CONNECT") {
        if (!valid_authority(t, e, true)) {
            fail(400, "CONNECT needs an authority-form target");
            return false;
        }
        path_off_ = 0;
        path_len_ = 0;
        return true;
    }
    if (*t == '/') {
        if (!valid_path_query(t, e, path_end)) {
            fail(400, "invalid request target");
            return false;
        }
        path_off_ = 0;
    } else if (e - t == 1 && *t == '*') {
        if (method != "OPTIONS") {
            fail(400, "asterisk-form target with a method other than OPTIONS");
            return false;
        }
        path_end = e;
        path_off_ = 0;
    } else {
        // absolute-form: scheme ":" hier-part [ "?" query ]
        const char* p = t;
        if (p == e || !is_alpha(*p)) {
            fail(400, "invalid request target");
            return false;
        }
        while (p < e && is_scheme_char(*p)) ++p;
        if (p == e || *p != ':') {
            fail(400, "invalid request target");
            return false;
        }
        ++p;
        const char* path = p;
        if (e - p >= 2 && p[0] == '/' && p[1] == '/') {
            const char* a = p + 2;
            const char* a_end = a;
            while (a_end < e && *a_end != '/' && *a_end != '?') ++a_end;
            if (!valid_authority(a, a_end, false)) {
                fail(400, "invalid authority in request target");
                return false;
            }
            path = a_end;
        }
        if (path < e && *path != '/' && *path != '?') {
            fail(400, "invalid request target");
            return false;
        }
        if (!valid_path_query(path, e, path_end)) {
            fail(400, "invalid request target");
            return false;
        }
        path_off_ = static_cast<std::uint32_t>(path - t);
    }
    path_len_ = static_cast<std::uint32_t>(path_end - t) - path_off_;
    if (path_end < e) {
        has_query_ = true;
        query_off_ = static_cast<std::uint32_t>(path_end + 1 - t);
        query_len_ = static_cast<std::uint32_t>(e - path_end - 1);
    }
    return true;
}

// field-line = field-name ":" OWS field-value OWS (RFC 9112 5).
bool request_parser::parse_field_line(const char* data, std::size_t begin, std::size_t end) {
    if (fields_.size() >= limits_->max_header_count) {
        fail(431, "too many header fields");
        return false;
    }
    if (end - begin + 2 > limits_->max_header_size) {
        fail(431, "header field too large");
        return false;
    }
    const char* const b = data + begin;
    const char* const e = data + end;
    // A line starting with whitespace is obsolete line folding, or hides a
    // field from recipients that ignore it (RFC 9112 2.2, 5.2): refused.
    if (is_ows(*b)) {
        fail(400, "obsolete line folding");
        return false;
    }
    const char* n = scan(b, e, cc_tchar);
    if (n == b || n == e || *n != ':') {
        // Includes whitespace between name and colon (RFC 9112 5.1: MUST 400).
        fail(400, "invalid header field name");
        return false;
    }
    const char* v = skip_ows(n + 1, e);
    if (scan_field_value(v, e) != e) {
        fail(400, "invalid byte in header field value");
        return false;
    }
    const char* ve = trim_ows_back(v, e);
    const std::string_view name(b, static_cast<std::size_t>(n - b));
    const std::string_view value(v, static_cast<std::size_t>(ve - v));
    fields_.push_back(field_span{static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(name.size()),
                                static_cast<std::uint32_t>(v - data), static_cast<std::uint32_t>(value.size())});
    bool ok = true;
    switch (name.size()) {
    case 4:
        if (token_equals(name, "host")) ok = on_host(value);
        break;
    case 6:
        if (token_equals(name, "expect")) expect_continue_ = expect_continue_ || token_equals(value, "100-continue");
        break;
    case 10:
        if (token_equals(name, "connection")) on_connection(value);
        break;
    case 14:
        if (token_equals(name, "content-length")) ok = on_content_length(value);
        break;
    case 17:
        if (token_equals(name, "transfer-encoding")) ok = on_transfer_encoding(value);
        break;
    default: break;
    }
    return ok;
}

// RFC 9110 8.6: 1*DIGIT. A repeated field or a list, even of equal values,
// is refused: it is how request smuggling starts.
bool request_parser::on_content_length(std::string_view value) {
    if (++content_length_count_ > 1) {
        fail(400, "more than one Content-Length");
        return false;
    }
    if (value.empty()) {
        fail(400, "invalid Content-Length");
        return false;
    }
    std::uint64_t n = 0;
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    for (char c : value) {
        if (c < '0' || c > '9') {
            fail(400, "invalid Content-Length");
            return false;
        }
        const auto d = static_cast<std::uint64_t>(c - '0');
        n = n > (max - d) / 10 ? max : n * 10 + d;  // saturates: then over any limit
    }
    content_length_ = n;
    return true;
}

// RFC 9112 6.1, 7: codings are combined across field lines; chunked must be
// last and appear once. We implement no other coding (501 for those).
bool request_parser::on_transfer_encoding(std::string_view value) {
    te_present_ = true;
    for_each_element(value, [this](std::string_view coding) {
        const char* p = coding.data();
        const char* e = p + coding.size();
        const char* name_end = scan(p, e, cc_tchar);
        if (name_end == p) {
            te_malformed_ = true;
            return;
        }
        // transfer-coding = token *( OWS ";" OWS transfer-parameter )
        const char* rest = skip_ows(name_end, e);
        const bool has_params = rest < e;
        if (has_params && *rest != ';') {
            te_malformed_ = true;
            return;
        }
        if (token_equals(std::string_view(p, static_cast<std::size_t>(name_end - p)), "chunked")) {
            if (te_chunked_seen_ || has_params) te_malformed_ = true;  // applied once, no parameters
            te_chunked_seen_ = true;
            te_chunked_last_ = true;
        } else {
            te_chunked_last_ = false;
            te_unknown_ = true;
        }
    });
    return true;
}

bool request_parser::on_host(std::string_view value) {
    if (++host_count_ > 1) {
        fail(400, "more than one Host");
        return false;
    }
    if (!valid_authority(value.data(), value.data() + value.size(), false)) {
        fail(400, "invalid Host");
        return false;
    }
    return true;
}

void request_parser::on_connection(std::string_view value) noexcept {
    for_each_element(value, [this](std::string_view option) {
        if (token_equals(option, "close"))
            conn_close_ = true;
        else if (token_equals(option, "keep-alive"))
            conn_keep_alive_ = true;
    });
}

parse_status request_parser::finish_head(const char* data, std::size_t head_end, std::size_t& consumed) {
    if (version_ == 11 && host_count_ == 0) return fail(400, "missing Host");
    bool chunked = false;
    if (te_present_) {
        if (content_length_count_ != 0) return fail(400, "both Content-Length and Transfer-Encoding");
        if (version_ == 10) return fail(400, "Transfer-Encoding on HTTP/1.0");
        if (te_malformed_) return fail(400, "invalid Transfer-Encoding");
        if (!te_chunked_last_) return fail(400, "chunked is not the final transfer coding");
        if (te_unknown_) return fail(501, "unsupported transfer coding");
        chunked = true;
    } else if (content_length_ > limits_->max_body_size) {
        return fail(413, "body over the limit");
    }

    // One copy of the head; the request's views point into it.
    auto& head = out_->head;
    head.assign(data + head_start_, head_end - head_start_);
    const char* const base = head.data() - head_start_;
    auto& req = out_->req;
    req.method = std::string_view(base + method_off_, method_len_);
    req.target = std::string_view(base + target_off_, target_len_);
    req.path = req.target.substr(path_off_, path_len_);
    if (req.path.empty() && req.target != "*" && req.method != "CONNECT") req.path = root_path;  // "http://a"
    req.query = has_query_ ? req.target.substr(query_off_, query_len_) : std::string_view();
    req.version = version_;
    req.headers.reserve(fields_.size());
    for (const auto& f : fields_)
        req.headers.push_back(header_field{std::string_view(base + f.name_off, f.name_len),
                                           std::string_view(base + f.value_off, f.value_len)});
    req.keep_alive = version_ == 11 ? !conn_close_ : (conn_keep_alive_ && !conn_close_);
    out_->is_head = req.method == "HEAD";
    head_bytes_ = head_end - head_start_;
    consumed = head_end;

    if (chunked) {
        state_ = state::chunk_size;
        return parse_status::head_done;
    }
    if (content_length_ == 0) {
        state_ = state::done;
        return parse_status::complete;
    }
    remaining_ = content_length_;
    state_ = state::body_length;
    return parse_status::head_done;
}

// ------------------------------------------------------------------- body

bool request_parser::take_body_bytes(const char* data, std::size_t size, std::size_t& pos) {
    std::string& body = *sink_;
    const auto room = sink_max_ - std::min(sink_max_, body.size());
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>({remaining_, size - pos, room}));
    body.append(data + pos, n);
    pos += n;
    remaining_ -= n;
    body_received_ += n;
    return remaining_ == 0;
}

parse_status request_parser::feed_body(const char* data, std::size_t size, std::size_t& consumed) {
    std::size_t pos = 0;
    for (;;) {
        switch (state_) {
        case state::body_length: {
            const bool whole = take_body_bytes(data, size, pos);
            consumed = pos;
            if (!whole) return parse_status::need_more;
            state_ = state::done;
            return parse_status::complete;
        }
        case state::chunk_size: {
            const void* hit = std::memchr(data + pos, '\n', size - pos);
            if (!hit) {
                // Chunk extensions are held to the field size limit.
                if (size - pos > limits_->max_header_size) return fail(400, "chunk size line too long");
                consumed = pos;
                return parse_status::need_more;
            }
            const auto lf = static_cast<std::size_t>(static_cast<const char*>(hit) - data);
            if (lf == pos || data[lf - 1] != '\r') return fail(400, "bare LF in chunked framing");
            if (!parse_chunk_line(data + pos, data + lf - 1)) return parse_status::error;
            pos = lf + 1;
            if (remaining_ == 0) {
                state_ = state::trailers;
            } else {
                if (remaining_ > limits_->max_body_size - body_received_) return fail(413, "body over the limit");
                state_ = state::chunk_data;
            }
            break;
        }
        case state::chunk_data: {
            if (!take_body_bytes(data, size, pos)) {
                consumed = pos;
                return parse_status::need_more;
            }
            state_ = state::chunk_data_end;
            crlf_seen_ = 0;
            break;
        }
        case state::chunk_data_end: {
            if (pos == size) {
                consumed = pos;
                return parse_status::need_more;
            }
            if (data[pos] != (crlf_seen_ == 0 ? '\r' : '\n')) return fail(400, "no CRLF after chunk data");
            ++pos;
            if (++crlf_seen_ == 2) state_ = state::chunk_size;
            break;
        }
        case state::trailers: {
            const void* hit = std::memchr(data + pos, '\n', size - pos);
            if (!hit) {
                if (size - pos > limits_->max_header_size) return fail(431, "trailer field too large");
                if (head_bytes_ + trailer_bytes_ + (size - pos) > limits_->max_header_bytes)
                    return fail(431, "trailer section too large");
                consumed = pos;
                return parse_status::need_more;
            }
            const auto lf = static_cast<std::size_t>(static_cast<const char*>(hit) - data);
            if (lf == pos || data[lf - 1] != '\r') return fail(400, "bare LF in trailers");
            if (lf - 1 == pos) {
                consumed = lf + 1;
                state_ = state::done;
                return parse_status::complete;
            }
            trailer_bytes_ += lf + 1 - pos;
            if (!check_trailer_line(data + pos, data + lf - 1)) return parse_status::error;
            pos = lf + 1;
            break;
        }
        case state::head:
        case state::done:
        case state::failed: consumed = pos; return fail(400, "request already parsed");
        }
    }
}

// chunk-size [ chunk-ext ] (RFC 9112 7.1, 7.1.1):
//   chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
// Extensions are checked and ignored. Sets remaining_ to the chunk size.
bool request_parser::parse_chunk_line(const char* p, const char* e) {
    std::uint64_t size = 0;
    const char* q = p;
    for (; q < e; ++q) {
        const int d = hex_value(*q);
        if (d < 0) break;
        if (size > (std::numeric_limits<std::uint64_t>::max() >> 4)) {
            fail(400, "chunk size overflows");
            return false;
        }
        size = (size << 4) | static_cast<unsigned>(d);
    }
    if (q == p) {
        fail(400, "invalid chunk size");
        return false;
    }
    if (q < e && is_ows(e[-1])) {
        fail(400, "invalid chunk extension");
        return false;
    }
    while (q < e) {
        q = skip_ows(q, e);
        if (q == e || *q != ';') {
            fail(400, q == e ? "invalid chunk size" : "invalid chunk extension");
            return false;
        }
        q = skip_ows(q + 1, e);
        const char* name_end = scan(q, e, cc_tchar);
        if (name_end == q) {
            fail(400, "invalid chunk extension");
            return false;
        }
        q = name_end;
        const char* after = skip_ows(q, e);
        if (after < e && *after == '=') {
            q = skip_ows(after + 1, e);
            if (q < e && *q == '"') {
                q = skip_quoted_string(q, e);
            } else {
                const char* t = scan(q, e, cc_tchar);
                q = t == q ? nullptr : t;
            }
            if (!q) {
                fail(400, "invalid chunk extension");
                return false;
            }
        }
    }
    remaining_ = size;
    return true;
}

// Trailer fields obey the header syntax and limits and are then dropped
// (RFC 9110 6.5.2: never merged into the header section); the fields that
// may not be trailers at all are refused (forbidden_trailers above).
bool request_parser::check_trailer_line(const char* p, const char* e) {
    if (fields_.size() + (++trailer_count_) > limits_->max_header_count) {
        fail(431, "too many trailer fields");
        return false;
    }
    if (static_cast<std::size_t>(e - p) + 2 > limits_->max_header_size) {
        fail(431, "trailer field too large");
        return false;
    }
    if (head_bytes_ + trailer_bytes_ > limits_->max_header_bytes) {
        fail(431, "trailer section too large");
        return false;
    }
    if (is_ows(*p)) {
        fail(400, "obsolete line folding in trailers");
        return false;
    }
    const char* n = scan(p, e, cc_tchar);
    if (n == p || n == e || *n != ':' || scan_field_value(n + 1, e) != e) {
        fail(400, "invalid trailer field");
        return false;
    }
    if (forbidden_as_trailer(std::string_view(p, static_cast<std::size_t>(n - p)))) {
        fail(400, "field not allowed in trailers");
        return false;
    }
    return true;
}

}  // namespace m0::http::detail
