#pragma once
// The access log's line formats: a gunicorn-style format string
// ("%(h)s %(l)s ... %({user-agent}i)s") compiled once at start-up into a list
// of atoms, or JSON lines. Rendering appends one line to a buffer, so a
// reactor formats without allocating once its buffer has grown.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <m0/api.hpp>
#include <m0/http.hpp>

namespace m0::telemetry {

// One finished response, as the engine saw it.
struct response_record {
    const http::request* req = nullptr;  // null: rejected before it parsed (a 400 on garbage)
    boost::asio::ip::tcp::endpoint remote;
    unsigned status = 0;                 // 0: the connection ended before a response began
    std::uint64_t body_bytes = 0;        // response body bytes handed to the connection
    std::chrono::microseconds duration{0};
    std::string_view mount;              // the serving mount's prefix ("" for "/")
    http::request_outcome outcome = http::request_outcome::ok;
    // Values of the response headers the format asks for (%({name}o)s), in
    // the order of access_log_format::response_headers(); empty when absent.
    const std::vector<std::string>* response_values = nullptr;
};

class M0_INTERNAL_API access_log_format {
public:
    // gunicorn's default: %(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"
    static constexpr std::string_view gunicorn_default =
        R"(%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s")";

    // Compiles a format string; throws std::invalid_argument naming the
    // offending atom.
    static access_log_format text(std::string_view format);
    static access_log_format json();

    // Response header names the format reads, lower-case.
    const std::vector<std::string>& response_headers() const noexcept { return response_headers_; }

    // Appends one line (with its '\n') to `out`. `pid` and `reactor` fill
    // %(p)s and the JSON "pid"/"reactor" keys.
    void render(const response_record& r, int pid, unsigned reactor, std::string& out) const;

private:
    enum class kind : std::uint8_t {
        literal, remote_host, dash, user, time_clf, request_line, method, url_path, query, protocol,
        status, bytes_clf, bytes, referer, user_agent, seconds, micros, millis, decimal_seconds, pid,
        request_header, response_header, target, outcome
    };
    struct atom {
        kind k;
        std::string text;    // literal text, or a header name (lower-case)
        std::size_t index = 0;  // response header: position in response_headers_
    };
    void render_text(const response_record& r, int pid, std::string& out) const;
    void render_json(const response_record& r, int pid, unsigned reactor, std::string& out) const;

    bool json_ = false;
    std::vector<atom> atoms_;
    std::vector<std::string> response_headers_;
};

}  // namespace m0::telemetry
