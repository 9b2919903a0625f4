#pragma once
// The bytes of one connection, shared by both protocol engines: the
// non-blocking socket itself, or TLS over it (tls non-null).
#include <cstddef>

#include <boost/asio/ip/tcp.hpp>
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
output_queue::result transport_flush(output_queue& out, boost::asio::ip::tcp::socket& socket, tls::connection* tls,
                                     int& error);

}  // namespace m0::http::detail
