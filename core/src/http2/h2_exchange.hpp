#pragma once
// The exchange of one HTTP/2 stream: what a frontend holds, the same
// interface the HTTP/1.1 engine hands out. Every call goes to the
// connection with its stream; calls after the response ended, or after the
// stream or the connection went away, are ignored there.
#include <memory>

#include <m0/http.hpp>

#include "http2/h2_session.hpp"

namespace m0::http2 {

class h2_exchange final : public http::exchange {
public:
    h2_exchange(std::shared_ptr<h2_session> owner, std::shared_ptr<h2_stream> st) noexcept
        : session_(std::move(owner)), stream_(std::move(st)) {}
    ~h2_exchange() override;

    const http::request& req() const override { return stream_->data->req; }
    boost::asio::io_context& io() override { return session_->io(); }
    void respond(unsigned status, std::vector<http::response_header> headers, std::string body) override;
    void begin(unsigned status, std::vector<http::response_header> headers,
               std::optional<std::uint64_t> content_length) override;
    void write(std::string data) override;
    void write_file(int fd, std::uint64_t offset, std::uint64_t length) override;
    void end() override;
    void abort() override;
    std::size_t pending_bytes() const override { return static_cast<std::size_t>(stream_->out.pending()); }
    void when_drained(std::size_t below, std::function<void()> fn) override;
    bool client_gone() const override { return session_->client_gone(*stream_); }
    void respond_borrowed(unsigned status, const std::vector<http::response_header>& headers,
                          std::string_view body) override;
    void read_body(std::size_t max_bytes, http::body_handler fn) override;
    bool body_pending() const override;
    void on_client_gone(std::function<void()> fn) override;
    void on_drain(std::function<void()> fn) override;
    // Only an extended CONNECT (RFC 8441, when http2.websocket is on) can
    // switch: 200, then the stream's DATA both ways (h2_byte_stream).
    std::shared_ptr<http::byte_stream> upgrade(std::vector<http::response_header> headers) override {
        return session_->upgrade(stream_, headers);
    }
    void end_with_trailers(std::vector<http::response_header> trailers) override;
    void write_shared(std::shared_ptr<const std::string> data) override;
    // END_STREAM is how every HTTP/2 request ends, not a half-close: a
    // client that leaves resets the stream, which on_client_gone reports.
    void on_peer_eof(std::function<void()>) override {}
    void write_shared_batch(std::span<const std::shared_ptr<const std::string>> pieces) override;
    void set_outcome(http::request_outcome o) override { stream_->outcome = o; }

private:
    std::shared_ptr<h2_session> session_;
    std::shared_ptr<h2_stream> stream_;
    bool whole_taken_ = false;  // read_body handed out request::body
};

// A WebSocket over one HTTP/2 stream (RFC 8441): what the HTTP/1.1 engine's
// byte_stream is after 101, on DATA frames. Reads are granted window as
// they are taken; writes wait in the stream for the client's window.
class h2_byte_stream final : public http::byte_stream {
public:
    h2_byte_stream(std::shared_ptr<h2_session> owner, std::shared_ptr<h2_stream> st) noexcept
        : session_(std::move(owner)), stream_(std::move(st)) {}

    boost::asio::io_context& io() override { return session_->io(); }
    void async_read(read_handler fn) override { session_->stream_read(*stream_, std::move(fn)); }
    void write(std::string data) override;
    void write_shared(std::shared_ptr<const std::string> data) override;
    std::size_t pending_bytes() const override { return static_cast<std::size_t>(stream_->out.pending()); }
    void when_drained(std::size_t below, std::function<void()> fn) override {
        session_->when_drained(*stream_, below, std::move(fn));
    }
    void on_drain(std::function<void()> fn) override { session_->stream_on_drain(*stream_, std::move(fn)); }
    void close() override { session_->stream_close(*stream_); }
    bool closed() const override { return session_->stream_closed(*stream_); }

private:
    std::shared_ptr<h2_session> session_;
    std::shared_ptr<h2_stream> stream_;
};

}  // namespace m0::http2
