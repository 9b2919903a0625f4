#include "redis_connection.hpp"

#include <hiredis/hiredis.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>

namespace m0::realtime {

namespace asio = boost::asio;

std::string format_command(const std::vector<std::string_view>& args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (auto a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
    return out;
}

std::string format_command(std::initializer_list<std::string_view> args) {
    return format_command(std::vector<std::string_view>(args));
}

redis_connection::redis_connection(asio::io_context& io, redis_address address,
                                   std::chrono::milliseconds connect_timeout, callbacks cb)
    : io_(io),
      address_(std::move(address)),
      connect_timeout_(connect_timeout),
      cb_(std::move(cb)),
      socket_(io),
      resolver_(io),
      connect_timer_(io),
      reader_(nullptr, redisReaderFree) {}

redis_connection::~redis_connection() { close(); }

void redis_connection::close() noexcept {
    ++generation_;
    boost::system::error_code ec;
    socket_.close(ec);
    resolver_.cancel();
    connect_timer_.cancel();
    state_ = state::idle;
    out_.clear();
    writing_.clear();
    write_pending_ = false;
    reader_.reset();
}

void redis_connection::fail(const std::string& why) {
    if (state_ == state::idle) return;
    close();
    if (cb_.down) cb_.down(why);
}

void redis_connection::connect() {
    close();
    state_ = state::connecting;
    reader_.reset(redisReaderCreate());
    auto gen = generation_;
    connect_timer_.expires_after(connect_timeout_);
    connect_timer_.async_wait([this, gen](boost::system::error_code ec) {
        if (ec || gen != generation_ || state_ != state::connecting) return;
        fail("no connection within " + std::to_string(connect_timeout_.count()) + " ms");
    });
    endpoints_.clear();
    if (address_.kind == redis_address::transport::unix_socket) {
        endpoints_.emplace_back(asio::local::stream_protocol::endpoint(address_.path));
        try_endpoint(0);
        return;
    }
    resolver_.async_resolve(address_.host, std::to_string(address_.port),
                            [this, gen](boost::system::error_code ec, asio::ip::tcp::resolver::results_type results) {
                                if (gen != generation_) return;
                                if (ec) return fail("cannot resolve " + address_.host + ": " + ec.message());
                                for (auto& r : results) endpoints_.emplace_back(r.endpoint());
                                try_endpoint(0);
                            });
}

void redis_connection::try_endpoint(std::size_t i) {
    auto gen = generation_;
    boost::system::error_code ec;
    socket_.close(ec);
    socket_.open(endpoints_[i].protocol(), ec);
    if (ec) return fail("cannot open a socket: " + ec.message());
    socket_.async_connect(endpoints_[i], [this, gen, i](boost::system::error_code ec) {
        if (gen != generation_) return;
        if (ec) {
            if (i + 1 < endpoints_.size()) return try_endpoint(i + 1);
            return fail(ec.message());
        }
        on_connected();
    });
}

void redis_connection::on_connected() {
    connect_timer_.cancel();
    if (address_.kind == redis_address::transport::tcp) {
        // A server that vanishes without a reset is noticed by the kernel.
        boost::system::error_code ec;
        socket_.set_option(asio::socket_base::keep_alive(true), ec);
    }
    do_read();
    if (!address_.password.empty()) {
        state_ = state::authenticating;
        std::string auth = address_.username.empty() ? format_command({"AUTH", address_.password})
                                                     : format_command({"AUTH", address_.username, address_.password});
        // AUTH goes before anything queued while connecting.
        out_.insert(0, auth);
        do_write();
        return;
    }
    state_ = state::up;
    do_write();
    if (cb_.up) cb_.up();
}

void redis_connection::send(std::string_view command) {
    if (state_ == state::idle) return;
    out_ += command;
    if (state_ != state::connecting) do_write();
}

void redis_connection::do_write() {
    if (write_pending_ || out_.empty()) return;
    write_pending_ = true;
    writing_.swap(out_);
    out_.clear();
    auto gen = generation_;
    asio::async_write(socket_, asio::buffer(writing_), [this, gen](boost::system::error_code ec, std::size_t) {
        if (gen != generation_) return;
        write_pending_ = false;
        writing_.clear();
        if (ec) return fail("write: " + ec.message());
        do_write();
    });
}

void redis_connection::do_read() {
    auto gen = generation_;
    socket_.async_read_some(asio::buffer(in_), [this, gen](boost::system::error_code ec, std::size_t n) {
        if (gen != generation_) return;
        if (ec) return fail(ec == asio::error::eof ? "the server closed the connection" : ec.message());
        on_read(n);
    });
}

void redis_connection::on_read(std::size_t n) {
    auto gen = generation_;
    if (redisReaderFeed(reader_.get(), in_.data(), n) != REDIS_OK) return fail("unreadable reply");
    std::vector<redisReply*> replies;
    for (;;) {
        void* r = nullptr;
        if (redisReaderGetReply(reader_.get(), &r) != REDIS_OK) {
            for (auto* x : replies) freeReplyObject(x);
            return fail(std::string("protocol error: ") + reader_->errstr);
        }
        if (!r) break;
        replies.push_back(static_cast<redisReply*>(r));
    }
    if (state_ == state::authenticating && !replies.empty()) {
        redisReply* auth = replies.front();
        replies.erase(replies.begin());
        bool ok = auth->type != REDIS_REPLY_ERROR;
        std::string why = ok ? "" : std::string("AUTH refused: ") + std::string(auth->str, auth->len);
        freeReplyObject(auth);
        if (!ok) {
            for (auto* x : replies) freeReplyObject(x);
            return fail(why);
        }
        state_ = state::up;
        if (cb_.up) cb_.up();
        if (gen != generation_) {
            for (auto* x : replies) freeReplyObject(x);
            return;
        }
    }
    if (!replies.empty() && cb_.replies) cb_.replies(replies);
    for (auto* x : replies) freeReplyObject(x);
    if (gen == generation_) do_read();
}

}  // namespace m0::realtime
