#include "http/trusted_networks.hpp"

#include <charconv>

namespace m0::http {

namespace {

boost::asio::ip::address unmapped(const boost::asio::ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
    return a;
}

// True when the first `bits` bits of the two byte arrays are equal.
template <class Bytes>
bool same_prefix(const Bytes& a, const Bytes& b, unsigned bits) noexcept {
    for (std::size_t i = 0; i < a.size() && bits > 0; ++i) {
        const unsigned take = bits >= 8 ? 8 : bits;
        const auto mask = static_cast<unsigned char>(0xff00u >> take);
        if ((a[i] & mask) != (b[i] & mask)) return false;
        bits -= take;
    }
    return true;
}

// The address with every bit after `prefix` cleared.
template <class Address>
boost::asio::ip::address network_of(const Address& a, unsigned prefix) {
    auto bytes = a.to_bytes();
    for (unsigned i = prefix; i < bytes.size() * 8; ++i)
        bytes[i / 8] &= static_cast<unsigned char>(~(0x80u >> (i % 8)));
    return Address(bytes);
}

}  // namespace

std::optional<ip_network> ip_network::parse(std::string_view text, std::string& why) {
    const auto slash = text.find('/');
    const std::string host(text.substr(0, slash));
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    if (ec || host.empty()) {
        why = "'" + host + "' is not an IP address";
        return std::nullopt;
    }
    const unsigned max = address.is_v4() ? 32 : 128;
    unsigned prefix = max;
    if (slash != std::string_view::npos) {
        const auto bits = text.substr(slash + 1);
        const auto r = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
        if (bits.empty() || r.ec != std::errc() || r.ptr != bits.data() + bits.size() || prefix > max ||
            (bits.size() > 1 && bits.front() == '0')) {
            why = "'/" + std::string(bits) + "' is not a prefix length 0.." + std::to_string(max);
            return std::nullopt;
        }
    }
    // Host bits set: "10.0.0.1/8" is either a host or a network, and the
    // reader cannot tell which was meant.
    const auto network = address.is_v4() ? network_of(address.to_v4(), prefix) : network_of(address.to_v6(), prefix);
    if (network != address) {
        why = "host bits are set beyond /" + std::to_string(prefix) + " (the network is " + network.to_string() + "/" +
              std::to_string(prefix) + ")";
        return std::nullopt;
    }
    return ip_network{address, prefix};
}

bool ip_network::contains(const boost::asio::ip::address& a) const noexcept {
    if (a.is_v4() != address.is_v4()) return false;
    if (a.is_v4()) return same_prefix(a.to_v4().to_bytes(), address.to_v4().to_bytes(), prefix);
    return same_prefix(a.to_v6().to_bytes(), address.to_v6().to_bytes(), prefix);
}

bool trusted_networks::contains(const boost::asio::ip::address& a) const noexcept {
    if (everyone_) return true;
    const auto plain = unmapped(a);
    for (const auto& n : nets_)
        if (n.contains(plain)) return true;
    return false;
}

}  // namespace m0::http
