#pragma once
// The engine's byte_stream: a connection after 101 Switching Protocols.
// Every call is forwarded to the session, which keeps the socket, its
// output queue, its timeouts and its place in the server's drain and
// force-close.
#include <memory>

#include <m0/http.hpp>

namespace m0::http::detail {

class session;

class byte_stream_impl final : public byte_stream {
public:
    explicit byte_stream_impl(std::shared_ptr<session> owner) noexcept : session_(std::move(owner)) {}

    boost::asio::io_context& io() override;
    void async_read(read_handler fn) override;
    void write(std::string data) override;
    void write_shared(std::shared_ptr<const std::string> data) override;
    std::size_t pending_bytes() const override;
    void when_drained(std::size_t below, std::function<void()> fn) override;
    void on_drain(std::function<void()> fn) override;
    void close() override;
    bool closed() const override;

private:
    std::shared_ptr<session> session_;
};

}  // namespace m0::http::detail
