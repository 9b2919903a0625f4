#pragma once
// The parse step of the HTTP/1.1 engine: bytes in, one request_data out.
//
// Kept apart from the connection so the rules can be hardened (issue 6) or
// the parser replaced without touching I/O. Runs on Boost.Beast's
// basic_parser; the head is parsed only once it is complete in the buffer,
// so every view the callbacks see points into one contiguous range, which
// is copied once into request_data::head.
#include <cstddef>
#include <cstdint>
#include <optional>

#include <boost/beast/http/basic_parser.hpp>

#include <m0/http_limits.hpp>

#include "http/request_data.hpp"

namespace m0::http::detail {

enum class parse_status {
    need_more,  // consumed what it could; feed more bytes
    head_done,  // the head is complete (reported once per request)
    complete,   // the whole request, body included, is in request_data
    error,      // reject with error_status() and close
};

class request_parser {
public:
    explicit request_parser(const http_limits& limits) : limits_(&limits) {}

    // Begins a new request that will be parsed into `out`.
    void start(request_data& out);
    // Forgets the current request (done, rejected, or connection closing).
    void stop() noexcept {
        parser_.reset();
        out_ = nullptr;
        head_reported_ = false;
    }
    // Parses from [data, data + size); `consumed` bytes may be dropped from
    // the caller's buffer. Must not be called again after complete/error
    // without start().
    parse_status feed(const char* data, std::size_t size, std::size_t& consumed);

    bool started() const noexcept { return parser_.has_value(); }
    // Some bytes of the current request were seen.
    bool got_some() const noexcept { return parser_ && parser_->got_some(); }
    bool head_done() const noexcept { return head_reported_; }
    bool expects_continue() const noexcept { return expect_continue_; }
    // A body is still to come (after head_done).
    bool body_pending() const noexcept { return parser_ && parser_->is_header_done() && !parser_->is_done(); }
    // Status to answer an error with: 400, 413, 414, 431, 501.
    unsigned error_status() const noexcept { return error_status_; }

private:
    class beast_parser final : public boost::beast::http::basic_parser<true> {
    public:
        beast_parser(request_parser& owner) : owner_(owner) {}

    private:
        using error_code = boost::beast::error_code;
        using string_view = boost::beast::string_view;
        void on_request_impl(boost::beast::http::verb method, string_view method_str, string_view target,
                             int version, error_code& ec) override;
        void on_response_impl(int, string_view, int, error_code& ec) override;
        void on_field_impl(boost::beast::http::field name, string_view name_str, string_view value,
                           error_code& ec) override;
        void on_header_impl(error_code& ec) override;
        void on_body_init_impl(boost::optional<std::uint64_t> const& content_length, error_code& ec) override;
        std::size_t on_body_impl(string_view body, error_code& ec) override;
        void on_chunk_header_impl(std::uint64_t size, string_view extensions, error_code& ec) override;
        std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body, error_code& ec) override;
        void on_finish_impl(error_code& ec) override;

        request_parser& owner_;
    };

    // Sets the status to answer with and returns an error for Beast to stop on.
    boost::beast::error_code reject(unsigned status);
    bool in_input(const char* p, std::size_t n) const noexcept;
    bool head_complete(const char* data, std::size_t size) noexcept;
    void rebase_head(const char* base, std::size_t head_size);
    unsigned status_for(const boost::beast::error_code& ec) const;

    const http_limits* limits_;
    std::optional<beast_parser> parser_;
    request_data* out_ = nullptr;
    const char* input_ = nullptr;       // the range being fed, for the head views
    std::size_t input_size_ = 0;
    std::size_t scan_from_ = 0;         // head bytes already searched for its end
    unsigned error_status_ = 0;
    bool head_reported_ = false;
    bool expect_continue_ = false;
    bool te_seen_ = false;
};

}  // namespace m0::http::detail
