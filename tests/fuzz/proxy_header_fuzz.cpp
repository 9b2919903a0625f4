// libFuzzer target: what a proxy (or a client posing as one) sends before or
// in a request: the PROXY protocol header (core/src/http/proxy_protocol)
// and the forwarding headers (core/src/http/forwarded).
//
// Input: one mode byte, then the bytes.
//  * mode even: the bytes are what arrives on a `proxy` listener. Oracles:
//    a header found is no longer than the input, every shorter prefix of it
//    asks for more, and the verdict on the header alone is the same; an
//    error stays an error whatever follows.
//  * mode odd: the bytes are header lines "Name: value" separated by '\n',
//    resolved as if from a trusted peer (loopback and 10.0.0.0/8 trusted).
//    Oracles: a malformed verdict leaves the client unchanged and says why;
//    the scheme is always "http" or "https".
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "http/forwarded.hpp"
#include "http/proxy_protocol.hpp"

namespace {

using namespace m0::http;

void check(bool ok) {
    if (!ok) std::abort();
}

void fuzz_proxy_header(std::string_view data) {
    constexpr std::size_t limit = 4096;
    proxy_header h;
    std::string why;
    const auto status = parse_proxy_header(data, limit, h, why);
    if (status == proxy_parse_status::error) {
        check(!why.empty());
        std::string more(data);
        more += "\r\n";
        proxy_header h2;
        std::string why2;
        check(parse_proxy_header(more, limit, h2, why2) == proxy_parse_status::error);
        return;
    }
    if (status == proxy_parse_status::need_more) return;
    check(h.length > 0 && h.length <= data.size());
    check(h.version == 1 || h.version == 2);
    proxy_header whole;
    std::string why2;
    check(parse_proxy_header(data.substr(0, h.length), limit, whole, why2) == proxy_parse_status::done);
    check(whole.length == h.length && whole.has_addresses == h.has_addresses && whole.source == h.source);
    check(parse_proxy_header(data.substr(0, h.length - 1), limit, whole, why2) == proxy_parse_status::need_more);
}

void fuzz_forwarded(std::string_view data) {
    std::vector<std::string> names, values;
    while (!data.empty()) {
        const auto nl = data.find('\n');
        const auto line = data.substr(0, nl);
        const auto colon = line.find(':');
        names.emplace_back(line.substr(0, colon));
        values.emplace_back(colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1));
        if (nl == std::string_view::npos) break;
        data.remove_prefix(nl + 1);
    }
    std::vector<header_field> headers;
    for (std::size_t i = 0; i < names.size(); ++i) headers.push_back({names[i], values[i]});
    std::string why;
    auto net = [](const char* s) {
        std::string w;
        return *ip_network::parse(s, w);
    };
    static const trusted_networks trusted({net("127.0.0.0/8"), net("::1"), net("10.0.0.0/8")});
    const boost::asio::ip::tcp::endpoint peer(boost::asio::ip::make_address("127.0.0.1"), 5000);
    forwarded_client client{peer, "http"};
    const auto outcome = resolve_forwarded(headers, trusted, client, why);
    check(client.scheme == "http" || client.scheme == "https");
    if (outcome == forwarded_outcome::malformed) check(!why.empty() && client.remote == peer && client.scheme == "http");
    if (outcome == forwarded_outcome::none) check(client.remote == peer && client.scheme == "http");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0)
        fuzz_proxy_header(bytes);
    else
        fuzz_forwarded(bytes);
    return 0;
}
