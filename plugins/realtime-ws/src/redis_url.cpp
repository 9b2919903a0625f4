#include "redis_url.hpp"

#include <sys/un.h>

#include <charconv>

namespace m0::realtime {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool percent_decode(std::string_view in, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        if (i + 2 >= in.size()) return false;
        int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
        if (hi < 0 || lo < 0) return false;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return true;
}

template <typename T>
bool parse_number(std::string_view s, T& out, T max) {
    if (s.empty()) return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && out <= max;
}

bool fail(std::string& error, std::string message) {
    error = std::move(message);
    return false;
}

// `[[user]:password@]` in front of the rest; strips it from `rest`.
bool parse_credentials(std::string_view& rest, redis_address& a, std::string& error) {
    auto at = rest.rfind('@');
    if (at == std::string_view::npos) return true;
    std::string_view cred = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    auto colon = cred.find(':');
    if (colon == std::string_view::npos) return fail(error, "credentials must be 'user:password@' or ':password@'");
    if (!percent_decode(cred.substr(0, colon), a.username) || !percent_decode(cred.substr(colon + 1), a.password))
        return fail(error, "bad percent-encoding in the credentials");
    return true;
}

bool parse_tcp(std::string_view rest, redis_address& a, std::string& error) {
    if (!parse_credentials(rest, a, error)) return false;
    std::string_view hostport = rest.substr(0, rest.find('/'));
    std::string_view db = rest.size() > hostport.size() ? rest.substr(hostport.size() + 1) : std::string_view{};
    std::string_view port;
    if (hostport.starts_with('[')) {
        auto close = hostport.find(']');
        if (close == std::string_view::npos) return fail(error, "an IPv6 host needs its closing ']'");
        a.host = std::string(hostport.substr(1, close - 1));
        std::string_view after = hostport.substr(close + 1);
        if (!after.empty() && !after.starts_with(':')) return fail(error, "expected ':port' after the IPv6 host");
        if (!after.empty()) port = after.substr(1);
        if (!after.empty() && port.empty()) return fail(error, "empty port");
    } else {
        auto colon = hostport.find(':');
        a.host = std::string(hostport.substr(0, colon));
        if (colon != std::string_view::npos) {
            port = hostport.substr(colon + 1);
            if (port.empty()) return fail(error, "empty port");
        }
    }
    if (a.host.empty()) return fail(error, "no host (redis://host:port/db)");
    if (!port.empty()) {
        std::uint16_t p = 0;
        if (!parse_number<std::uint16_t>(port, p, 65535) || p == 0)
            return fail(error, "port must be a number 1..65535, not '" + std::string(port) + "'");
        a.port = p;
    }
    if (!db.empty() && !parse_number<unsigned>(db, a.db, 1u << 20))
        return fail(error, "the database must be a number, not '" + std::string(db) + "'");
    return true;
}

bool parse_unix(std::string_view rest, redis_address& a, std::string& error) {
    a.kind = redis_address::transport::unix_socket;
    if (!parse_credentials(rest, a, error)) return false;
    auto q = rest.find('?');
    a.path = std::string(rest.substr(0, q));
    if (!a.path.starts_with('/')) return fail(error, "the socket path must be absolute (unix:///path/to/redis.sock)");
    if (a.path.size() == 1) return fail(error, "no socket path (unix:///path/to/redis.sock)");
    // What a sockaddr_un holds; checked here, since connecting could not say it.
    if (a.path.size() > sizeof(sockaddr_un::sun_path) - 1)
        return fail(error, "the socket path is longer than " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                               " bytes");
    if (q == std::string_view::npos) return true;
    std::string_view query = rest.substr(q + 1);
    if (!query.starts_with("db=")) return fail(error, "the only query parameter is db=N, not '" + std::string(query) + "'");
    if (!parse_number<unsigned>(query.substr(3), a.db, 1u << 20))
        return fail(error, "the database must be a number, not '" + std::string(query.substr(3)) + "'");
    return true;
}

}  // namespace

std::string redis_address::display() const {
    std::string who = username.empty() && password.empty() ? "" : username + (password.empty() ? "@" : ":***@");
    if (kind == transport::unix_socket) return "unix://" + who + path + (db ? "?db=" + std::to_string(db) : "");
    std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return "redis://" + who + h + ":" + std::to_string(port) + "/" + std::to_string(db);
}

std::optional<redis_address> parse_redis_url(std::string_view url, std::string& error) {
    redis_address a;
    bool ok = false;
    if (url.starts_with("redis://"))
        ok = parse_tcp(url.substr(8), a, error);
    else if (url.starts_with("unix://"))
        ok = parse_unix(url.substr(7), a, error);
    else
        ok = fail(error, "expected 'memory', 'redis://host:port/db' or 'unix:///path/to/redis.sock'");
    if (!ok) return std::nullopt;
    return a;
}

}  // namespace m0::realtime
