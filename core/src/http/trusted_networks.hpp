#pragma once
// The networks whose forwarding headers m0 believes
// (server.forwarded_allow_ips): addresses and CIDR blocks, or everyone.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include <m0/api.hpp>

namespace m0::http {

// One block: an address and how many leading bits of it must match.
struct ip_network {
    boost::asio::ip::address address;
    unsigned prefix = 0;  // 0..32 for IPv4, 0..128 for IPv6

    // "10.0.0.0/8", "::1", "fd00::/8"; a plain address is a /32 (/128).
    // nullopt with `why` set when the text is none of these, or when bits
    // beyond the prefix are set ("10.0.0.1/8": a typo for a host or a net).
    M0_INTERNAL_API static std::optional<ip_network> parse(std::string_view text, std::string& why);
    M0_INTERNAL_API bool contains(const boost::asio::ip::address& a) const noexcept;
};

class trusted_networks {
public:
    trusted_networks() = default;
    explicit trusted_networks(std::vector<ip_network> nets, bool everyone = false)
        : nets_(std::move(nets)), everyone_(everyone) {}

    // An IPv4-mapped IPv6 peer (::ffff:10.0.0.1, from a dual-stack
    // listener) is matched as the IPv4 address it carries.
    M0_INTERNAL_API bool contains(const boost::asio::ip::address& a) const noexcept;
    bool everyone() const noexcept { return everyone_; }
    bool empty() const noexcept { return !everyone_ && nets_.empty(); }

private:
    std::vector<ip_network> nets_;
    bool everyone_ = false;
};

}  // namespace m0::http
