#include "http/transport.hpp"

#include <cerrno>

namespace m0::http::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// The output queue's way through TLS.
struct tls_sink final : output_queue::sink {
    tls_sink(tls::connection& c, bool more) : conn(c), more_follows(more) {}
    output_queue::result write(const char* data, std::size_t len, std::size_t& written, int& error) override {
        switch (conn.write(data, len, written, more_follows)) {
            case tls::connection::status::done: return output_queue::result::done;
            case tls::connection::status::want_write: return output_queue::result::would_block;
            case tls::connection::status::want_read:  // no renegotiation: a peer that asks for one is broken
            case tls::connection::status::closed:
            case tls::connection::status::failed: break;
        }
        error = conn.socket_error() ? conn.socket_error() : EPROTO;
        return output_queue::result::failed;
    }
    tls::connection& conn;
    const bool more_follows;
};
}  // namespace

std::size_t transport_read(asio::ip::tcp::socket& socket, tls::connection* tls, char* p, std::size_t cap,
                           error_code& ec, bool& wants_write) {
    wants_write = false;
    if (!tls) return socket.read_some(asio::buffer(p, cap), ec);
    std::size_t n = 0;
    switch (tls->read(p, cap, n)) {
        case tls::connection::status::done: ec = {}; return n;
        case tls::connection::status::want_write: wants_write = true; [[fallthrough]];
        case tls::connection::status::want_read: ec = asio::error::would_block; return 0;
        case tls::connection::status::closed: ec = asio::error::eof; return 0;
        case tls::connection::status::failed: break;
    }
    ec = error_code(tls->socket_error() ? tls->socket_error() : ECONNRESET, boost::system::system_category());
    return 0;
}

output_queue::result transport_flush(output_queue& out, asio::ip::tcp::socket& socket, tls::connection* tls,
                                     int& error, bool close_notify_follows) {
    if (!tls) return out.flush(socket.native_handle(), error);
    tls_sink through_tls{*tls, close_notify_follows};
    return out.flush(through_tls, error);
}

}  // namespace m0::http::detail
