#pragma once
// The bytes of one connection, shared by both protocol engines: the
// non-blocking socket itself, or TLS over it (tls non-null).
#include <cstddef>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <m0/tls/connection.hpp>

#include "http/output_queue.hpp"

namespace m0::http::detail {

// Reads what is there now into [p, p + cap). would_block when nothing is;
// eof at the end of the stream (a TLS close_notify too). wants_write: TLS
// needs the socket writable before it can read on.
std::size_t transport_read(boost::asio::ip::tcp::socket& socket, tls::connection* tls, char* p, std::size_t cap,
                           boost::system::error_code& ec, bool& wants_write);

// Writes what `out` holds until it is empty or the socket would block.
// close_notify_follows: the caller sends TLS's close_notify right after
// (tls::connection::send_close_notify, until it returns true), so the last
// small records may wait to leave with it in one send.
output_queue::result transport_flush(output_queue& out, boost::asio::ip::tcp::socket& socket, tls::connection* tls,
                                     int& error, bool close_notify_follows = false);

// Calls ready(ec) once a TLS read may make progress: posted at once when
// OpenSSL holds records read ahead (the socket may be empty), else when the
// socket is readable (writable, when TLS asked for that). socket_first, or
// a last read that wanted more: what OpenSSL holds is part of a record and
// only the socket can complete it (posting again would spin).
template <class Ready>
void transport_wait_tls(boost::asio::io_context& io, boost::asio::ip::tcp::socket& socket, tls::connection& tls,
                        bool wants_write, bool socket_first, Ready ready) {
    if (!socket_first && !wants_write && tls.has_buffered_input()) {
        boost::asio::post(io, [ready = std::move(ready)]() mutable { ready(boost::system::error_code{}); });
        return;
    }
    socket.async_wait(wants_write ? boost::asio::socket_base::wait_write : boost::asio::socket_base::wait_read,
                      std::move(ready));
}

// TLS's close_notify, and the records TLS still holds (the end of the last
// response, a GOAWAY: they did not fit in the socket), leave before the
// send side is shut: send_close_notify() is tried again each time the
// socket is writable until it has sent them, then done(ec) runs, ec set if
// the socket failed. Both engines close through it; the caller bounds the
// wait with its write timeout (closing the socket ends it with an error).
template <class Done>
void transport_finish_tls(boost::asio::ip::tcp::socket& socket, tls::connection& tls, Done done) {
    if (tls.send_close_notify()) {
        done(boost::system::error_code{});
        return;
    }
    socket.async_wait(boost::asio::socket_base::wait_write,
                      [&socket, &tls, done = std::move(done)](const boost::system::error_code& ec) mutable {
                          if (ec) {
                              done(ec);
                              return;
                          }
                          transport_finish_tls(socket, tls, std::move(done));
                      });
}

}  // namespace m0::http::detail
