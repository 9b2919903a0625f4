#pragma once
// The engine's exchange: the request it owns and a line to its connection.
// Every response call is forwarded to the session, which ignores calls from
// an exchange that is no longer the one it is answering.
#include <memory>

#include <m0/http.hpp>

#include "http/request_data.hpp"

namespace m0::http::detail {

class session;

class exchange_impl final : public exchange {
public:
    exchange_impl(std::shared_ptr<session> owner, std::unique_ptr<request_data> data, bool streamed) noexcept
        : session_(std::move(owner)), data_(std::move(data)), streamed_(streamed) {}
    ~exchange_impl() override;

    const request& req() const override { return data_->req; }
    boost::asio::io_context& io() override;
    void respond(unsigned status, std::vector<response_header> headers, std::string body) override;
    void begin(unsigned status, std::vector<response_header> headers,
               std::optional<std::uint64_t> content_length) override;
    void write(std::string data) override;
    void write_file(int fd, std::uint64_t offset, std::uint64_t length) override;
    void end() override;
    void abort() override;
    std::size_t pending_bytes() const override;
    void when_drained(std::size_t below, std::function<void()> fn) override;
    bool client_gone() const override;
    void respond_borrowed(unsigned status, const std::vector<response_header>& headers,
                          std::string_view body) override;
    void read_body(std::size_t max_bytes, body_handler fn) override;
    bool body_pending() const override;
    void on_client_gone(std::function<void()> fn) override;
    void on_drain(std::function<void()> fn) override;
    std::shared_ptr<byte_stream> upgrade(std::vector<response_header> headers) override;
    void end_with_trailers(std::vector<response_header> trailers) override;
    void write_shared(std::shared_ptr<const std::string> data) override;
    void on_peer_eof(std::function<void()> fn) override;
    void write_shared_batch(std::span<const std::shared_ptr<const std::string>> pieces) override;
    void set_outcome(request_outcome o) override;

    bool is_head() const noexcept { return data_->is_head; }
    unsigned version() const noexcept { return data_->req.version; }

private:
    std::shared_ptr<session> session_;  // keeps the connection's state alive
    std::unique_ptr<request_data> data_;
    const bool streamed_;       // the body is pulled from the connection
    bool whole_taken_ = false;  // read_body handed out request::body
};

}  // namespace m0::http::detail
