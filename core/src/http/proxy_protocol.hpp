#pragma once
// The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2)
// that a proxy sends before the first byte of a connection on a listener
// marked `proxy`. Strict: anything but a well-formed header is an error,
// and the connection is closed without an answer (the peer is a proxy, not
// a client that could read one).
#include <cstddef>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>

namespace m0::http {

enum class proxy_parse_status { need_more, done, error };

struct proxy_header {
    unsigned version = 0;  // 1 or 2
    // False for a v2 LOCAL command (the proxy's own health check), a v1
    // UNKNOWN line, and v2 addresses of family UNSPEC or UNIX: the
    // connection then keeps its socket's addresses.
    bool has_addresses = false;
    boost::asio::ip::tcp::endpoint source;       // the client, as the proxy saw it
    boost::asio::ip::tcp::endpoint destination;  // the address the client connected to
    // v2 only: a PP2_TYPE_SSL TLV says the client spoke TLS to the proxy.
    bool ssl = false;
    std::size_t length = 0;  // bytes of the header, to skip before HTTP
};

// v1: "PROXY TCP4|TCP6|UNKNOWN ...\r\n", at most 107 bytes.
inline constexpr std::size_t proxy_v1_max_length = 107;
// v2: a 16-byte fixed part, then addresses and TLVs.
inline constexpr std::size_t proxy_v2_fixed_length = 16;

// Parses the header at the start of `data` (the bytes received so far).
// need_more: `data` is a valid beginning of a header; done: `out` is set;
// error: `why` says what is wrong. A v2 header longer than `max_length` is
// an error (the read buffer must hold it whole).
M0_INTERNAL_API proxy_parse_status parse_proxy_header(std::string_view data, std::size_t max_length,
                                                      proxy_header& out, std::string& why);

}  // namespace m0::http
