#include <m0/websocket/handshake.hpp>

#include <algorithm>

#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/core/detail/sha1.hpp>

#include "trim.hpp"

namespace m0::websocket {
namespace {

constexpr std::string_view guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

using detail::trim;

// Every comma-separated element of every `name` header, trimmed, empty ones dropped.
std::vector<std::string_view> list_header(const http::request& req, std::string_view name) {
    std::vector<std::string_view> out;
    for (const auto& h : req.headers) {
        if (!http::ascii_iequals(h.name, name)) continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            auto comma = v.find(',');
            auto item = trim(v.substr(0, comma));
            if (!item.empty()) out.push_back(item);
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
    return out;
}

bool has_token(const std::vector<std::string_view>& items, std::string_view token) {
    return std::any_of(items.begin(), items.end(), [&](auto i) { return http::ascii_iequals(i, token); });
}

std::size_t count_headers(const http::request& req, std::string_view name) {
    return static_cast<std::size_t>(std::count_if(req.headers.begin(), req.headers.end(),
                                                  [&](const auto& h) { return http::ascii_iequals(h.name, name); }));
}

// 16 random bytes in base64: 22 alphabet characters and "==" (RFC 6455 4.1).
bool is_valid_key(std::string_view key) {
    if (key.size() != 24 || key.substr(22) != "==") return false;
    const auto* inverse = boost::beast::detail::base64::get_inverse();
    for (char c : key.substr(0, 22))
        if (inverse[static_cast<unsigned char>(c)] == -1) return false;
    // The last character carries 2 bits of data; the other 4 must be zero.
    return std::string_view("AQgw").find(key[21]) != std::string_view::npos;
}

handshake_result refuse(unsigned status, std::string why) {
    handshake_result r;
    r.status = status;
    r.headers = {{"Content-Type", "text/plain"}, {"Sec-WebSocket-Version", "13"}};
    if (status == 426) r.headers.push_back({"Upgrade", "websocket"});
    r.body = std::move(why) + "\n";
    return r;
}

std::optional<std::string> pick_subprotocol(const std::vector<std::string_view>& offered,
                                            const handshake_options& options) {
    if (offered.empty()) return std::nullopt;
    if (options.select_subprotocol) {
        auto chosen = options.select_subprotocol(offered);
        // A selector may only pick what the client offered.
        if (chosen && std::find(offered.begin(), offered.end(), *chosen) == offered.end()) return std::nullopt;
        return chosen;
    }
    for (const auto& mine : options.subprotocols)
        if (std::find(offered.begin(), offered.end(), mine) != offered.end()) return mine;
    return std::nullopt;
}

}  // namespace

std::string accept_key(std::string_view key) {
    namespace detail = boost::beast::detail;
    detail::sha1_context ctx;
    detail::init(ctx);
    detail::update(ctx, key.data(), key.size());
    detail::update(ctx, guid.data(), guid.size());
    char digest[detail::sha1_context::digest_size];
    detail::finish(ctx, digest);
    std::string out(detail::base64::encoded_size(sizeof digest), '\0');
    out.resize(detail::base64::encode(out.data(), digest, sizeof digest));
    return out;
}

bool is_upgrade_request(const http::request& req) { return has_token(list_header(req, "Upgrade"), "websocket"); }

handshake_result check_handshake(const http::request& req, const handshake_options& options) {
    if (!is_upgrade_request(req))
        return refuse(426, "this resource is a WebSocket endpoint: send Upgrade: websocket");
    if (req.method != "GET") return refuse(400, "a WebSocket handshake must be a GET request");
    if (req.version < 11) return refuse(400, "a WebSocket handshake needs HTTP/1.1");
    if (!has_token(list_header(req, "Connection"), "upgrade"))
        return refuse(400, "a WebSocket handshake needs Connection: upgrade");
    auto versions = list_header(req, "Sec-WebSocket-Version");
    if (versions.size() != 1 || versions.front() != "13")
        return refuse(426, "unsupported or missing Sec-WebSocket-Version: this server speaks version 13");
    auto key = req.header("Sec-WebSocket-Key");
    if (!key || count_headers(req, "Sec-WebSocket-Key") != 1 || !is_valid_key(trim(*key)))
        return refuse(400, "missing or malformed Sec-WebSocket-Key (16 bytes in base64)");

    handshake_result r;
    r.accepted = true;
    r.status = 101;
    r.origin = req.header("Origin");
    r.headers = {{"Upgrade", "websocket"}, {"Sec-WebSocket-Accept", accept_key(trim(*key))}};
    if (auto chosen = pick_subprotocol(list_header(req, "Sec-WebSocket-Protocol"), options)) {
        r.subprotocol = *chosen;
        r.headers.push_back({"Sec-WebSocket-Protocol", *chosen});
    }
    std::vector<std::string_view> extensions;
    for (const auto& h : req.headers)
        if (http::ascii_iequals(h.name, "Sec-WebSocket-Extensions")) extensions.push_back(h.value);
    r.deflate = negotiate_deflate(extensions, options.deflate);
    if (r.deflate) r.headers.push_back({"Sec-WebSocket-Extensions", r.deflate->response});
    return r;
}

}  // namespace m0::websocket
