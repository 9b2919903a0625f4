#pragma once
// One connection to a Redis server over Asio (TCP or a unix socket): RESP
// commands out, replies parsed with hiredis's reader in. Everything runs on
// the io_context's one thread; errors are error_codes turned into one
// `down` call per connect.
#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "redis_url.hpp"

struct redisReader;
struct redisReply;

namespace m0::realtime {

class redis_connection {
public:
    struct callbacks {
        std::function<void()> up;  // connected (and authenticated)
        // Every reply read in one go, in order; freed after the call.
        std::function<void(const std::vector<redisReply*>&)> replies;
        std::function<void(const std::string& why)> down;  // once per connect(), unless close()d
    };

    redis_connection(boost::asio::io_context& io, redis_address address, std::chrono::milliseconds connect_timeout,
                     callbacks cb);
    ~redis_connection();
    redis_connection(const redis_connection&) = delete;
    redis_connection& operator=(const redis_connection&) = delete;

    void connect();
    // A command formatted as RESP (format_command); queued while connecting.
    void send(std::string_view command);
    bool up() const noexcept { return state_ == state::up; }
    // Drops the connection without a `down` call.
    void close() noexcept;

private:
    enum class state { idle, connecting, authenticating, up };
    using socket_type = boost::asio::generic::stream_protocol::socket;

    void try_endpoint(std::size_t i);
    void on_connected();
    void do_read();
    void on_read(std::size_t n);
    void do_write();
    void fail(const std::string& why);

    boost::asio::io_context& io_;
    const redis_address address_;
    const std::chrono::milliseconds connect_timeout_;
    callbacks cb_;
    socket_type socket_;
    boost::asio::ip::tcp::resolver resolver_;
    boost::asio::steady_timer connect_timer_;
    std::vector<boost::asio::generic::stream_protocol::endpoint> endpoints_;
    std::unique_ptr<redisReader, void (*)(redisReader*)> reader_;
    std::array<char, 64 * 1024> in_{};
    std::string out_;      // waiting for the write in progress
    std::string writing_;  // being written
    bool write_pending_ = false;
    state state_ = state::idle;
    // Bumped by every connect and close: a handler of an earlier connection
    // finds it changed and does nothing.
    std::uint64_t generation_ = 0;
};

// A command as RESP: an array of bulk strings.
std::string format_command(std::initializer_list<std::string_view> args);
std::string format_command(const std::vector<std::string_view>& args);

}  // namespace m0::realtime
