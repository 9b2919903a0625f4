#include "telemetry/access_log_format.hpp"

#include <time.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <stdexcept>

#include <m0/listen_socket.hpp>

namespace m0::telemetry {

namespace {

// A client on a Unix socket has no address: "unix:", as nginx logs it.
std::string remote_host(const boost::asio::ip::tcp::endpoint& remote) {
    return is_unix_endpoint(remote) ? std::string("unix:") : remote.address().to_string();
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

void append_number(std::string& out, std::uint64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, end);
}

constexpr char hex_digits[] = "0123456789abcdef";

// Request-controlled text in a text line: control bytes, quotes, backslashes
// and non-ASCII bytes become \xHH (as nginx does), so a client cannot forge
// a line or break a quoted field.
void append_escaped(std::string& out, std::string_view s) {
    if (s.empty()) {
        out.push_back('-');
        return;
    }
    for (unsigned char c : s) {
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            out += "\\x";
            out.push_back(hex_digits[c >> 4]);
            out.push_back(hex_digits[c & 15]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
}

// A JSON string. Bytes outside ASCII are written as \u00XX (their Latin-1
// reading) so that every line is valid JSON whatever a client sent.
void append_json_string(std::string& out, std::string_view s) {
    out.push_back('"');
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c >= 0x7f) {
            out += "\\u00";
            out.push_back(hex_digits[c >> 4]);
            out.push_back(hex_digits[c & 15]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    out.push_back('"');
}

std::string_view header_or_empty(const http::request* req, std::string_view name) {
    if (!req) return {};
    return req->header(name).value_or(std::string_view{});
}

// The user name of `Authorization: Basic` credentials (RFC 7617: base64 of
// "user:password"), as gunicorn's %(u)s; empty when there is none or it does
// not decode. The password is never kept.
std::string basic_auth_user(const http::request* req) {
    auto value = header_or_empty(req, "authorization");
    constexpr std::string_view scheme = "basic ";
    if (value.size() <= scheme.size()) return {};
    for (std::size_t i = 0; i < scheme.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i]) return {};
    value.remove_prefix(scheme.size());
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    std::string decoded;
    unsigned bits = 0, acc = 0;
    for (char c : value) {
        int v = c >= 'A' && c <= 'Z' ? c - 'A'
              : c >= 'a' && c <= 'z' ? c - 'a' + 26
              : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+' ? 62 : c == '/' ? 63 : c == '=' ? -2 : -1;
        if (v == -2) break;  // padding: the end
        if (v < 0) return {};
        acc = (acc << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            decoded.push_back(static_cast<char>((acc >> bits) & 0xFF));
        }
    }
    const auto colon = decoded.find(':');
    if (colon == std::string::npos) return {};
    decoded.resize(colon);
    return decoded;
}

std::string_view protocol(const http::request& req) {
    if (req.version == 20) return "HTTP/2";
    return req.version == 10 ? "HTTP/1.0" : "HTTP/1.1";
}

// Formats the wall clock at most once a second per thread.
struct clock_text {
    std::time_t second = -1;
    char clf[40] = {};   // [01/Dec/2026:05:40:01 +0000]
    std::size_t clf_size = 0;
    char iso[32] = {};   // 2026-12-01T05:40:01 (milliseconds added per line)
    std::size_t iso_size = 0;
    long millis = 0;

    void refresh() {
        timespec ts{};
        clock_gettime(CLOCK_REALTIME_COARSE, &ts);
        millis = ts.tv_nsec / 1'000'000;
        if (ts.tv_sec == second) return;
        second = ts.tv_sec;
        std::tm tm{};
        gmtime_r(&second, &tm);
        clf_size = std::strftime(clf, sizeof clf, "[%d/%b/%Y:%H:%M:%S +0000]", &tm);
        iso_size = std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
    }
};

thread_local clock_text now_text;

}  // namespace

access_log_format access_log_format::json() {
    access_log_format f;
    f.json_ = true;
    return f;
}

access_log_format access_log_format::text(std::string_view format) {
    access_log_format f;
    auto add_literal = [&f](std::string_view s) {
        if (s.empty()) return;
        if (f.atoms_.empty() || f.atoms_.back().k != kind::literal) f.atoms_.push_back({kind::literal, {}, 0});
        f.atoms_.back().text.append(s);
    };
    std::size_t i = 0;
    while (i < format.size()) {
        const auto pct = format.find('%', i);
        if (pct == std::string_view::npos) {
            add_literal(format.substr(i));
            break;
        }
        add_literal(format.substr(i, pct - i));
        if (pct + 1 < format.size() && format[pct + 1] == '%') {
            add_literal("%");
            i = pct + 2;
            continue;
        }
        // %(name)s
        const auto close = format.find(")s", pct);
        if (pct + 1 >= format.size() || format[pct + 1] != '(' || close == std::string_view::npos)
            throw std::invalid_argument("'%' at offset " + std::to_string(pct) +
                                        " starts no atom: write %(name)s, or %% for a percent sign");
        const std::string_view name = format.substr(pct + 2, close - pct - 2);
        i = close + 2;
        if (name.size() > 3 && name.front() == '{' && name[name.size() - 2] == '}' &&
            (name.back() == 'i' || name.back() == 'o')) {
            const std::string header = lower(name.substr(1, name.size() - 3));
            if (name.back() == 'i') {
                f.atoms_.push_back({kind::request_header, header, 0});
            } else {
                f.atoms_.push_back({kind::response_header, header, f.response_headers_.size()});
                f.response_headers_.push_back(header);
            }
            continue;
        }
        static const struct {
            std::string_view name;
            kind k;
        } simple[] = {
            {"h", kind::remote_host},  {"l", kind::dash},        {"u", kind::user},
            {"t", kind::time_clf},     {"r", kind::request_line}, {"m", kind::method},
            {"U", kind::url_path},     {"q", kind::query},       {"H", kind::protocol},
            {"s", kind::status},       {"b", kind::bytes_clf},   {"B", kind::bytes},
            {"f", kind::referer},      {"a", kind::user_agent},  {"T", kind::seconds},
            {"D", kind::micros},       {"M", kind::millis},      {"L", kind::decimal_seconds},
            {"p", kind::pid},          {"R", kind::target},
            {"outcome", kind::outcome},
        };
        bool found = false;
        for (const auto& s : simple) {
            if (s.name == name) {
                f.atoms_.push_back({s.k, {}, 0});
                found = true;
                break;
            }
        }
        if (!found)
            throw std::invalid_argument("unknown atom '%(" + std::string(name) +
                                        ")s' (known: h l u t r m U q H s b B f a T D M L p R, {header}i, {header}o)");
    }
    return f;
}

void access_log_format::render(const response_record& r, int pid, unsigned reactor, std::string& out) const {
    now_text.refresh();
    if (json_)
        render_json(r, pid, reactor, out);
    else
        render_text(r, pid, out);
    out.push_back('\n');
}

void access_log_format::render_text(const response_record& r, int pid, std::string& out) const {
    const http::request* req = r.req;
    const auto us = static_cast<std::uint64_t>(r.duration.count());
    for (const auto& a : atoms_) {
        switch (a.k) {
            case kind::literal: out += a.text; break;
            case kind::remote_host: out += remote_host(r.remote); break;
            case kind::dash: out.push_back('-'); break;
            case kind::user: {
                const auto user = basic_auth_user(req);
                if (user.empty()) out.push_back('-');
                else append_escaped(out, user);
                break;
            }
            case kind::time_clf: out.append(now_text.clf, now_text.clf_size); break;
            case kind::request_line:
                if (!req) {
                    out.push_back('-');
                    break;
                }
                append_escaped(out, req->method);
                out.push_back(' ');
                append_escaped(out, req->target);
                out.push_back(' ');
                out += protocol(*req);
                break;
            case kind::method: append_escaped(out, req ? req->method : std::string_view{}); break;
            case kind::url_path: append_escaped(out, req ? req->path : std::string_view{}); break;
            case kind::target: append_escaped(out, req ? req->target : std::string_view{}); break;
            case kind::query:
                if (req) append_escaped(out, req->query); else out.push_back('-');
                break;
            case kind::protocol: out += req ? protocol(*req) : std::string_view("-"); break;
            case kind::status:
                if (r.status) append_number(out, r.status); else out.push_back('-');
                break;
            case kind::bytes_clf:
                if (r.body_bytes) append_number(out, r.body_bytes); else out.push_back('-');
                break;
            case kind::bytes: append_number(out, r.body_bytes); break;
            case kind::referer: append_escaped(out, header_or_empty(req, "referer")); break;
            case kind::user_agent: append_escaped(out, header_or_empty(req, "user-agent")); break;
            case kind::seconds: append_number(out, us / 1'000'000); break;
            case kind::micros: append_number(out, us); break;
            case kind::millis: append_number(out, us / 1000); break;
            case kind::decimal_seconds: {
                char buf[32];
                const int n = std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(us) / 1e6);
                out.append(buf, static_cast<std::size_t>(n));
                break;
            }
            case kind::pid: append_number(out, static_cast<std::uint64_t>(pid)); break;
            case kind::outcome: out += http::to_string(r.outcome); break;
            case kind::request_header: append_escaped(out, header_or_empty(req, a.text)); break;
            case kind::response_header:
                append_escaped(out, r.response_values && a.index < r.response_values->size()
                                        ? std::string_view((*r.response_values)[a.index])
                                        : std::string_view{});
                break;
        }
    }
}

void access_log_format::render_json(const response_record& r, int pid, unsigned reactor, std::string& out) const {
    const http::request* req = r.req;
    char millis[8];
    std::snprintf(millis, sizeof millis, ".%03ldZ", now_text.millis);
    out += R"({"time":")";
    out.append(now_text.iso, now_text.iso_size).append(millis);
    out += R"(","remote_addr":)";
    append_json_string(out, remote_host(r.remote));
    out += R"(,"remote_port":)";
    append_number(out, is_unix_endpoint(r.remote) ? 0 : r.remote.port());
    auto field = [&](std::string_view key, std::string_view value, bool present) {
        out += ",\"";
        out += key;
        out += "\":";
        if (present)
            append_json_string(out, value);
        else
            out += "null";
    };
    field("method", req ? req->method : "", req != nullptr);
    field("target", req ? req->target : "", req != nullptr);
    field("path", req ? req->path : "", req != nullptr);
    field("query", req ? req->query : "", req != nullptr);
    field("protocol", req ? protocol(*req) : "", req != nullptr);
    out += R"(,"status":)";
    if (r.status) append_number(out, r.status); else out += "null";
    out += R"(,"bytes":)";
    append_number(out, r.body_bytes);
    out += R"(,"duration_us":)";
    append_number(out, static_cast<std::uint64_t>(r.duration.count()));
    const auto referer = req ? req->header("referer") : std::nullopt;
    const auto agent = req ? req->header("user-agent") : std::nullopt;
    field("referer", referer.value_or(""), referer.has_value());
    field("user_agent", agent.value_or(""), agent.has_value());
    field("mount", r.mount.empty() ? std::string_view("/") : r.mount, true);
    field("outcome", http::to_string(r.outcome), true);
    out += R"(,"pid":)";
    append_number(out, static_cast<std::uint64_t>(pid));
    out += R"(,"reactor":)";
    append_number(out, reactor);
    out.push_back('}');
}

}  // namespace m0::telemetry
