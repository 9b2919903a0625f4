// Test-only frontend `reflect`: answers every request with 200 and a JSON
// document describing what the HTTP/1.1 engine parsed (method, target,
// version, headers in arrival order, body). The conformance suite compares it
// with the parse the RFCs call for, so the encoding must be unambiguous:
// every string is a JSON string whose characters are the raw bytes (bytes
// >= 0x80 and controls as \u00XX, i.e. Latin-1), never a lossy UTF-8 guess.
//
// A few paths exercise the response side of the engine instead:
//   /status/<n>      respond(n) with a non-empty body (the engine must drop it
//                    for HEAD, 204 and 304)
//   /stream          begin() without a length, two writes, end()
//   /stream-length   begin() with the exact length, two writes, end()
//   /abort           begin() without a length, one write, abort()
//   /abort-length    begin() with a length, a shorter write, abort()
//   /handler-framing respond() with handler-set Content-Length and
//                    Transfer-Encoding, which belong to the engine
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/http.hpp>
#include <m0/plugin.hpp>

namespace m0::test_reflect {
namespace {

void append_json_string(std::string& out, std::string_view bytes) {
    out += '"';
    for (unsigned char c : bytes) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c >= 0x7f) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
            out += esc;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
}

std::string reflect(const http::request& req) {
    std::string out;
    out.reserve(256 + req.body.size() * 2);
    out += "{\"method\":";
    append_json_string(out, req.method);
    out += ",\"target\":";
    append_json_string(out, req.target);
    out += ",\"version\":" + std::to_string(req.version);
    out += ",\"keep_alive\":";
    out += req.keep_alive ? "true" : "false";
    out += ",\"headers\":[";
    bool first = true;
    for (const auto& h : req.headers) {
        if (!first) out += ',';
        first = false;
        out += '[';
        append_json_string(out, h.name);
        out += ',';
        append_json_string(out, h.value);
        out += ']';
    }
    out += "],\"body_length\":" + std::to_string(req.body.size());
    out += ",\"body\":";
    append_json_string(out, req.body);
    out += "}\n";
    return out;
}

std::vector<http::response_header> json_type() { return {{"Content-Type", "application/json"}}; }

class reflect_handler final : public http::handler {
public:
    void on_request(http::exchange_ptr ex) override {
        const auto& req = ex->req();
        std::string body = reflect(req);
        const std::string_view path = req.path;
        constexpr std::string_view status_prefix = "/status/";
        if (path.starts_with(status_prefix)) {
            unsigned status = 0;
            for (char c : path.substr(status_prefix.size())) {
                if (c < '0' || c > '9' || status > 999) return ex->respond(400, json_type(), std::move(body));
                status = status * 10 + static_cast<unsigned>(c - '0');
            }
            if (status < 200 || status > 599) return ex->respond(400, json_type(), std::move(body));
            return ex->respond(status, json_type(), std::move(body));
        }
        if (path == "/stream" || path == "/stream-length") {
            std::optional<std::uint64_t> length;
            if (path == "/stream-length") length = body.size();
            ex->begin(200, json_type(), length);
            const std::size_t half = body.size() / 2;
            ex->write(body.substr(0, half));
            ex->write(body.substr(half));
            return ex->end();
        }
        if (path == "/abort" || path == "/abort-length") {
            std::optional<std::uint64_t> length;
            if (path == "/abort-length") length = 100;
            ex->begin(200, {{"Content-Type", "text/plain"}}, length);
            ex->write("partial");
            return ex->abort();
        }
        if (path == "/handler-framing") {
            return ex->respond(200, {{"Content-Type", "application/json"},
                                     {"Content-Length", "999"},
                                     {"Transfer-Encoding", "chunked"},
                                     {"Keep-Alive", "timeout=999"}},
                               std::move(body));
        }
        ex->respond(200, json_type(), std::move(body));
    }
};

class reflect_frontend final : public frontend {
public:
    void start_reactor(reactor_context& ctx) override { http::serve(ctx, handler_); }

private:
    reflect_handler handler_;  // stateless, shared by all workers
};

std::unique_ptr<frontend> make_reflect_frontend(plugin_context& ctx) {
    ctx.section->allow_keys({"type"});
    return std::make_unique<reflect_frontend>();
}

}  // namespace
}  // namespace m0::test_reflect

M0_FRONTEND_PLUGIN("reflect", "test only: answers with the parsed request as JSON",
                   ::m0::test_reflect::make_reflect_frontend);
