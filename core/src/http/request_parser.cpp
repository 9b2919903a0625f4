#include "http/request_parser.hpp"

#include <algorithm>
#include <cstring>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

namespace m0::http::detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {
// An error code for Beast to unwind on; the status comes from reject().
const beast::error_code rejected = bhttp::error::bad_value;
// Body bytes reserved up front at most, whatever Content-Length claims.
constexpr std::uint64_t max_body_reserve = 1024 * 1024;
}  // namespace

void request_parser::start(request_data& out) {
    out_ = &out;
    parser_.emplace(*this);
    parser_->header_limit(limits_->max_header_bytes);
    parser_->body_limit(limits_->max_body_size);
    // Stop after the head so 100-continue and the body limit can be decided
    // before any body byte is read.
    parser_->eager(false);
    error_status_ = 0;
    head_reported_ = false;
    expect_continue_ = false;
    te_seen_ = false;
    scan_from_ = 0;
}

beast::error_code request_parser::reject(unsigned status) {
    error_status_ = status;
    return rejected;
}

bool request_parser::in_input(const char* p, std::size_t n) const noexcept {
    return p >= input_ && p + n <= input_ + input_size_;
}

unsigned request_parser::status_for(const beast::error_code& ec) const {
    if (error_status_ != 0) return error_status_;
    if (ec == bhttp::error::header_limit) return 431;
    if (ec == bhttp::error::body_limit) return 413;
    return 400;
}

parse_status request_parser::feed(const char* data, std::size_t size, std::size_t& consumed) {
    consumed = 0;
    if (size == 0) return parse_status::need_more;
    input_ = data;
    input_size_ = size;
    const bool head_was_done = parser_->is_header_done();
    if (!head_was_done && !head_complete(data, size)) {
        // An over-long request line is visible as a missing line end.
        const std::size_t scan = std::min<std::size_t>(size, limits_->max_request_line + 2);
        if (size > limits_->max_request_line + 1 && std::memchr(data, '\n', scan) == nullptr) {
            error_status_ = 414;
            return parse_status::error;
        }
        if (size > limits_->max_header_bytes) {
            error_status_ = 431;
            return parse_status::error;
        }
        return parse_status::need_more;
    }
    beast::error_code ec;
    consumed = parser_->put(boost::asio::const_buffer(data, size), ec);
    if (ec && ec != bhttp::error::need_more) {
        error_status_ = status_for(ec);
        return parse_status::error;
    }
    if (!head_was_done) {
        if (!parser_->is_header_done()) {
            error_status_ = 400;  // a whole head that Beast did not finish
            return parse_status::error;
        }
        if (te_seen_ && !parser_->chunked()) {
            // RFC 9112 6.3: a request body length cannot be known unless
            // chunked is the final coding.
            error_status_ = 400;
            return parse_status::error;
        }
        rebase_head(data, consumed);
        out_->req.keep_alive = parser_->keep_alive();
        head_reported_ = true;
        if (parser_->is_done()) return parse_status::complete;
        parser_->eager(true);
        return parse_status::head_done;
    }
    return parser_->is_done() ? parse_status::complete : parse_status::need_more;
}

// Beast consumes a complete request line before the rest of the head has
// arrived, leaving its views in bytes the caller is free to drop. So the
// head goes to Beast only once it is whole: up to CRLF CRLF, or up to a bare
// LF, which Beast then rejects. Scanning resumes where the last call ended.
bool request_parser::head_complete(const char* data, std::size_t size) noexcept {
    const char* p = data + std::min(scan_from_, size);
    const char* const end = data + size;
    while (const void* hit = std::memchr(p, '\n', static_cast<std::size_t>(end - p))) {
        const auto i = static_cast<std::size_t>(static_cast<const char*>(hit) - data);
        if (i == 0 || data[i - 1] != '\r') return true;
        if (i >= 3 && data[i - 2] == '\n' && data[i - 3] == '\r') return true;
        p = data + i + 1;
    }
    scan_from_ = size;
    return false;
}

void request_parser::rebase_head(const char* base, std::size_t head_size) {
    auto& head = out_->head;
    head.assign(base, head_size);
    const char* nb = head.data();
    auto move = [&](std::string_view v) { return std::string_view(nb + (v.data() - base), v.size()); };
    auto& req = out_->req;
    req.method = move(req.method);
    req.target = move(req.target);
    for (auto& h : req.headers) {
        h.name = move(h.name);
        h.value = move(h.value);
    }
    const auto q = req.target.find('?');
    if (q == std::string_view::npos) {
        req.path = req.target;
        req.query = {};
    } else {
        req.path = req.target.substr(0, q);
        req.query = req.target.substr(q + 1);
    }
}

void request_parser::beast_parser::on_request_impl(bhttp::verb method, string_view method_str,
                                                   string_view target, int version, error_code& ec) {
    auto& o = owner_;
    // method SP target SP HTTP/x.y
    if (method_str.size() + target.size() + 10 > o.limits_->max_request_line) {
        ec = o.reject(414);
        return;
    }
    auto& req = o.out_->req;
    req.method = method_str;
    req.target = target;
    req.version = static_cast<unsigned>(version);
    o.out_->is_head = method == bhttp::verb::head;
}

void request_parser::beast_parser::on_response_impl(int, string_view, int, error_code& ec) {
    ec = owner_.reject(400);
}

void request_parser::beast_parser::on_field_impl(bhttp::field name, string_view name_str, string_view value,
                                                 error_code& ec) {
    auto& o = owner_;
    if (o.head_reported_) return;  // trailer fields are read and ignored
    auto& req = o.out_->req;
    if (req.headers.size() >= o.limits_->max_header_count ||
        name_str.size() + value.size() + 4 > o.limits_->max_header_size) {
        ec = o.reject(431);
        return;
    }
    // Beast unfolds obsolete line folding into a scratch buffer; such a
    // value is not in the input. Folding is obsolete (RFC 9112 5.2): reject.
    if (!o.in_input(value.data(), value.size())) {
        ec = o.reject(400);
        return;
    }
    if (name == bhttp::field::expect) {
        if (beast::iequals(value, "100-continue")) o.expect_continue_ = true;
    } else if (name == bhttp::field::transfer_encoding) {
        o.te_seen_ = true;
    }
    req.headers.push_back(header_field{name_str, value});
}

void request_parser::beast_parser::on_header_impl(error_code&) {}

void request_parser::beast_parser::on_body_init_impl(boost::optional<std::uint64_t> const& content_length,
                                                     error_code&) {
    if (content_length) owner_.out_->req.body.reserve(std::min(*content_length, max_body_reserve));
}

std::size_t request_parser::beast_parser::on_body_impl(string_view body, error_code&) {
    owner_.out_->req.body.append(body.data(), body.size());
    return body.size();
}

void request_parser::beast_parser::on_chunk_header_impl(std::uint64_t, string_view, error_code&) {}

std::size_t request_parser::beast_parser::on_chunk_body_impl(std::uint64_t, string_view body, error_code&) {
    owner_.out_->req.body.append(body.data(), body.size());
    return body.size();
}

void request_parser::beast_parser::on_finish_impl(error_code&) {}

}  // namespace m0::http::detail
