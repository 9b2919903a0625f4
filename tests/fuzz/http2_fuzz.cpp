// libFuzzer target over the HTTP/2 engine (core/src/http2): a real session
// over a socketpair (engine_harness.hpp, as http_parser_fuzz), on a listener
// that speaks HTTP/2, opened with the h2c preface by the harness; the
// fuzzer works on the frames that follow it.
//
// Input: a control byte, a timing byte, two HTTP/2 bytes, then the
// client's bytes after the preface.
//  - control: bit 0 small request limits (a body of 64 bytes at most);
//    bits 1-7 how the stream (preface included) is split into reads, as in
//    http_parser_fuzz; bit 7 also the client's EOF after its last byte.
//  - timing: as in http_parser_fuzz (engine_harness.hpp): bit 0 shortens
//    every timeout to a millisecond, bits 1-5 and 7 say when the clock may
//    pass them, bit 6 drains the connection before the force-close.
//  - HTTP/2 (the engine's http2: settings, so that its limits are reachable
//    with short inputs):
//      bit 0  with timing bits 0 and 7: the pause after the last byte is
//             55 ms (110 ms with bit 6) instead of 1.5 ms, long enough for
//             the connection's timer (its tick is 50 ms at the least) to
//             fire once (twice): the write, body, header and idle timeouts,
//             the ping and its timeout. Only that pause, as each costs the
//             fuzzer some fifty runs
//      bit 1  max_concurrent_streams 2 (the running-handler limit too)
//      bit 2  initial_window_size 16 (request bodies wait for the reads)
//      bit 3  max_header_list_size 1024, max_header_count 8
//      bit 4  reset_burst 3, reset_rate 1
//      bit 5  max_requests_per_connection 2
//      bit 6  ping_interval and ping_timeout 1 ms
//      bit 7  the handler streams every request body (otherwise only on
//             /r... and /q...)
//  - HTTP/2, second byte: bit 0 WebSocket over HTTP/2 (http2.websocket:
//    extended CONNECT, RFC 8441); bits 1-7 unused.
//
// The handler answers by the path's second byte: every kind of
// http_parser_fuzz (engine_harness.hpp: inline, deferred, streamed,
// aborted, dropped, bodiless, large...) and those of HTTP/2's own paths:
// r (body pulled with read_body, then the answer), q (response begun, one
// piece pulled, the rest left unread; pulls refused), t (trailers with
// end_with_trailers), F (write_file), E (write_file of more than the file
// holds), p (a stream paced by when_drained), h (held until the drain, like
// an event stream), k (answered at once, the exchange let go of later: the
// running-handler limit), i (a status that is not final), e (end without
// begin, writes after the end), S (shared payloads). A request with
// `upgrade: websocket` (what an extended CONNECT becomes) is switched with
// upgrade(), as a frontend's WebSocket path does, and echoed on the byte
// stream until the client ends it, sends "close" or the drain comes.
//
// Fails on a crash, a leak, a sanitizer report, a connection or request
// left after the force-close, a file descriptor left open, or an answer
// that is not well-formed HTTP/2 (h2_oracle: frame syntax, HPACK that
// decodes, response heads and trailers in their place, no DATA past a
// content-length).
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nghttp2/nghttp2.h>

#include <boost/asio/steady_timer.hpp>

#include <m0/http.hpp>
#include <m0/log.hpp>

#include "engine_harness.hpp"

namespace {

using m0::fuzz::check;
namespace asio = boost::asio;
using m0::http::exchange_ptr;
using boost::system::error_code;

constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

m0::http2::settings settings_for(std::uint8_t h2, std::uint8_t h2b) {
    m0::http2::settings s;
    s.websocket = h2b & 1;
    if (h2 & 0x02) s.max_concurrent_streams = 2;
    if (h2 & 0x04) s.initial_window_size = 16;
    if (h2 & 0x08) {
        s.max_header_list_size = 1024;
        s.max_header_count = 8;
    }
    if (h2 & 0x10) {
        s.reset_burst = 3;
        s.reset_rate = 1;
    }
    if (h2 & 0x20) s.max_requests_per_connection = 2;
    if (h2 & 0x40) s.ping_interval = s.ping_timeout = std::chrono::milliseconds(1);
    return s;
}

// A file for write_file: file_size bytes in memory.
constexpr std::uint64_t file_size = 3000;
int the_file = -1;

void pull_all(const exchange_ptr& ex, std::uint64_t got) {
    ex->read_body(5, [ex, got](error_code ec, std::string chunk, bool last) {
        if (ec) return;  // dropped: the engine answers, or the client is gone
        if (!last) {
            pull_all(ex, got + chunk.size());
            return;
        }
        ex->respond(200, {}, "read " + std::to_string(got + chunk.size()));
    });
}

void pace(const exchange_ptr& ex, int left) {
    if (left == 0 || ex->client_gone()) {
        ex->end();
        return;
    }
    ex->write(std::string(8192, 'p'));
    ex->when_drained(4096, [ex, left] { pace(ex, left - 1); });
}

// The byte stream after an extended CONNECT: echoes what comes, ends on
// "close", on the client's end or on the drain.
void echo(const std::shared_ptr<m0::http::byte_stream>& s) {
    s->async_read([s](error_code ec, std::string_view data) {
        if (ec) {
            s->close();
            return;
        }
        if (data.find("close") != std::string_view::npos) {
            s->write("bye");
            s->close();
            return;
        }
        s->write(std::string(data));
        if (data.find("shared") != std::string_view::npos) s->write_shared(std::make_shared<const std::string>(data));
        s->when_drained(0, [s] { static_cast<void>(s->pending_bytes()); });
        echo(s);
    });
}

void open_websocket(const exchange_ptr& ex) {
    auto s = ex->upgrade({{"Sec-WebSocket-Accept", "x"}, {"Sec-WebSocket-Protocol", "chat"}});
    if (!s) {
        ex->respond(400, {}, "no upgrade");
        return;
    }
    s->on_drain([weak = std::weak_ptr<m0::http::byte_stream>(s)] {
        if (auto s = weak.lock()) {
            s->write("going away");
            s->close();
        }
    });
    echo(s);
}

class h2_handler final : public m0::http::handler {
public:
    explicit h2_handler(bool stream_all) : stream_all_(stream_all) {}

    bool stream_body(const m0::http::request& req) override {
        const char kind = m0::fuzz::kind_of(req);
        return stream_all_ || kind == 'r' || kind == 'q';
    }

    void on_request(exchange_ptr ex) override {
        if (auto up = ex->req().header("upgrade"); up && *up == "websocket") {
            open_websocket(ex);
            return;
        }
        const char kind = m0::fuzz::kind_of(ex->req());
        switch (kind) {
        case 'r': pull_all(ex, 0); break;
        case 'q':
            ex->begin(200, {}, std::nullopt);
            ex->read_body(3, [ex](error_code ec, std::string chunk, bool) {
                if (!ec) ex->write(std::move(chunk));
                ex->end();
                ex->read_body(3, [](error_code, std::string, bool) {});  // after the end: refused
            });
            ex->read_body(3, [](error_code, std::string, bool) {});  // a second pull at once: refused
            static_cast<void>(ex->body_pending());
            break;
        case 'k': {  // answered at once, let go of a millisecond later (a job that ends late)
            ex->respond(200, {}, "kept");
            auto later = std::make_shared<asio::steady_timer>(ex->io(), std::chrono::milliseconds(1));
            later->async_wait([ex, later](error_code) {});
            break;
        }
        case 'i': ex->respond(101, {}, "not final"); break;  // the engine answers 500
        case 'e':  // end without begin, and what comes after the end
            if (ex->req().body.empty()) {
                ex->end();
            } else {
                static const std::vector<m0::http::response_header> borrowed{{"X-Borrowed", "1"}};
                ex->respond_borrowed(200, borrowed, ex->req().body);
            }
            ex->write("late");
            ex->write_file(::dup(the_file), 0, 10);
            ex->end();
            break;
        case 'S': {  // shared payloads
            static const auto one = std::make_shared<const std::string>("shared,");
            const std::shared_ptr<const std::string> batch[] = {one, nullptr, std::make_shared<const std::string>(),
                                                                one};
            ex->begin(200, {}, std::nullopt);
            ex->write_shared(one);
            ex->write_shared_batch(batch);
            ex->end();
            break;
        }
        case 't':
            ex->begin(200, {{"X-Kind", "trailers"}}, std::nullopt);
            ex->write(std::string(ex->req().body));
            ex->end_with_trailers(
                {{"X-Checksum", "abc"}, {"Content-Length", "1"}, {"Bad Name", "x"}, {"X-Bad", "a\nb"}});
            break;
        case 'F':
            ex->begin(200, {}, file_size);
            ex->write_file(::dup(the_file), 0, file_size);
            ex->end();
            break;
        case 'E':  // the file ends before the length asked
            ex->begin(200, {}, std::nullopt);
            ex->write("head,");
            ex->write_file(::dup(the_file), file_size - 100, 500);
            ex->end();
            break;
        case 'p':
            ex->begin(200, {}, 6 * 8192);
            pace(ex, 6);
            break;
        case 'h':  // held until the drain (an event stream)
            ex->begin(200, {{"Content-Type", "text/event-stream"}}, std::nullopt);
            ex->write("data: hello\n\n");
            ex->on_drain([weak = std::weak_ptr<m0::http::exchange>(ex)] {
                if (auto ex = weak.lock()) {
                    ex->write("data: bye\n\n");
                    ex->end();
                }
            });
            ex->on_client_gone([ex] {});  // keeps it until the client is gone
            break;
        default: m0::fuzz::answer_by_kind(ex, kind); break;
        }
    }

private:
    const bool stream_all_;
};

// The server's frames, as a client reads them: each well-formed (RFC 9113
// section 6), the first a SETTINGS, header blocks that decode (HPACK, in
// order, one inflater for the connection), on each stream a response head
// (after any 1xx), DATA only after it and within its content-length,
// trailers last, nothing after END_STREAM or RST_STREAM. Only the last
// frame may be cut short (a force-close, the capture cap).
class h2_oracle {
public:
    h2_oracle() { check(nghttp2_hd_inflate_new(&inflater_) == 0); }
    ~h2_oracle() { nghttp2_hd_inflate_del(inflater_); }
    h2_oracle(const h2_oracle&) = delete;
    h2_oracle& operator=(const h2_oracle&) = delete;

    void check_all(std::string_view in) {
        // The HTTP/1.1 session answers before the preface is whole (its
        // header timeout): no HTTP/2 at all.
        if (in.starts_with("HTTP/1.1 ")) return;
        std::size_t pos = 0;
        bool first = true;
        while (in.size() - pos >= 9) {
            const auto* p = reinterpret_cast<const std::uint8_t*>(in.data() + pos);
            const std::size_t len = (std::size_t{p[0]} << 16) | (std::size_t{p[1]} << 8) | p[2];
            const std::uint8_t type = p[3], flags = p[4];
            check(!(p[5] & 0x80));  // the reserved bit
            const std::int32_t id = static_cast<std::int32_t>(((p[5] & 0x7fu) << 24) | (p[6] << 16) | (p[7] << 8) | p[8]);
            if (in.size() - pos - 9 < len) break;  // cut short
            const std::string_view payload = in.substr(pos + 9, len);
            pos += 9 + len;
            check(len <= 16384);  // the client never allowed more than the default
            if (first) check(type == NGHTTP2_SETTINGS && !(flags & NGHTTP2_FLAG_ACK) && id == 0);
            first = false;
            if (continuing_) check(type == NGHTTP2_CONTINUATION && id == block_stream_);
            frame(type, flags, id, payload);
        }
    }

private:
    struct stream_state {
        bool head = false;    // final response head seen
        bool ended = false;   // END_STREAM or RST_STREAM
        std::optional<std::uint64_t> length;
        std::uint64_t data = 0;
    };

    void frame(std::uint8_t type, std::uint8_t flags, std::int32_t id, std::string_view payload) {
        switch (type) {
        case NGHTTP2_DATA: {
            check(id > 0 && id % 2 == 1);
            auto& s = streams_[id];
            check(s.head && !s.ended);
            std::size_t n = payload.size();
            if (flags & NGHTTP2_FLAG_PADDED) {
                check(!payload.empty() && std::size_t{static_cast<std::uint8_t>(payload[0])} + 1 <= n);
                n -= 1 + static_cast<std::uint8_t>(payload[0]);
            }
            s.data += n;
            if (s.length) check(s.data <= *s.length);
            if (flags & NGHTTP2_FLAG_END_STREAM) s.ended = true;
            break;
        }
        case NGHTTP2_HEADERS: {
            check(id > 0 && id % 2 == 1);
            check(!streams_[id].ended);
            std::size_t skip = 0, pad = 0;
            if (flags & NGHTTP2_FLAG_PADDED) {
                check(!payload.empty());
                pad = static_cast<std::uint8_t>(payload[0]);
                skip = 1;
            }
            if (flags & NGHTTP2_FLAG_PRIORITY) skip += 5;
            check(skip + pad <= payload.size());
            block_.assign(payload.substr(skip, payload.size() - skip - pad));
            block_stream_ = id;
            block_end_stream_ = flags & NGHTTP2_FLAG_END_STREAM;
            continuing_ = !(flags & NGHTTP2_FLAG_END_HEADERS);
            if (!continuing_) header_block();
            break;
        }
        case NGHTTP2_CONTINUATION:
            check(continuing_ && id == block_stream_);
            block_.append(payload);
            continuing_ = !(flags & NGHTTP2_FLAG_END_HEADERS);
            if (!continuing_) header_block();
            break;
        case NGHTTP2_PRIORITY: check(payload.size() == 5 && id > 0); break;
        case NGHTTP2_RST_STREAM:
            check(payload.size() == 4 && id > 0);
            streams_[id].ended = true;
            break;
        case NGHTTP2_SETTINGS:
            check(id == 0 && payload.size() % 6 == 0);
            if (flags & NGHTTP2_FLAG_ACK) check(payload.empty());
            break;
        case NGHTTP2_PING: check(id == 0 && payload.size() == 8); break;
        case NGHTTP2_GOAWAY: check(id == 0 && payload.size() >= 8); break;
        case NGHTTP2_WINDOW_UPDATE: check(payload.size() == 4); break;
        default: check(false);  // no PUSH_PROMISE (push is off), no extension frames
        }
    }

    void header_block() {
        std::vector<std::pair<std::string, std::string>> fields;
        auto* in = reinterpret_cast<std::uint8_t*>(block_.data());
        std::size_t left = block_.size();
        for (;;) {
            nghttp2_nv nv;
            int inflate_flags = 0;
            const auto rv = nghttp2_hd_inflate_hd2(inflater_, &nv, &inflate_flags, in, left, 1);
            check(rv >= 0);
            in += rv;
            left -= static_cast<std::size_t>(rv);
            if (inflate_flags & NGHTTP2_HD_INFLATE_EMIT)
                fields.emplace_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                                    std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
            if (inflate_flags & NGHTTP2_HD_INFLATE_FINAL) {
                nghttp2_hd_inflate_end_headers(inflater_);
                break;
            }
            check(rv > 0 || (inflate_flags & NGHTTP2_HD_INFLATE_EMIT));  // progress
        }
        check(left == 0);
        auto& s = streams_[block_stream_];
        std::optional<unsigned> status;
        std::size_t lengths = 0;
        bool regular = false;
        for (const auto& [name, value] : fields) {
            check(!name.empty());
            for (char c : value) check(c != '\r' && c != '\n' && c != '\0');
            if (name[0] == ':') {
                check(!regular && name == ":status" && !status && value.size() == 3);  // pseudo-fields first
                unsigned code = 0;
                check(std::from_chars(value.data(), value.data() + 3, code).ec == std::errc());
                status = code;
                continue;
            }
            regular = true;
            for (char c : name) check(!(c >= 'A' && c <= 'Z') && c != ' ' && c != ':');
            // RFC 9113 8.2.2: no connection-specific fields.
            for (std::string_view f : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"})
                check(name != f);
            if (name == "te") check(value == "trailers");
            if (name == "content-length") {
                ++lengths;
                std::uint64_t n = 0;
                check(std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc());
                s.length = n;
            }
        }
        check(lengths <= 1);
        if (!s.head) {
            check(status && *status >= 100 && *status <= 999);
            if (*status < 200) {
                check(!block_end_stream_ && lengths == 0);  // interim: 100 Continue
            } else {
                s.head = true;
                if (*status == 204 || *status == 304) s.length = std::uint64_t{0};
                if (*status == 204) check(lengths == 0);
            }
        } else {
            check(!status && block_end_stream_);  // trailers: no pseudo-fields, the last frame
        }
        if (block_end_stream_) s.ended = true;
    }

    nghttp2_hd_inflater* inflater_ = nullptr;
    std::unordered_map<std::int32_t, stream_state> streams_;
    std::string block_;
    std::int32_t block_stream_ = 0;
    bool block_end_stream_ = false;
    bool continuing_ = false;
};

std::size_t open_fds() {
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d)) ++n;
        ::closedir(d);
    }
    return n;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    m0::log::set_level(m0::log::level::warning);
    the_file = ::memfd_create("m0-http2-fuzz", MFD_CLOEXEC);
    if (the_file < 0) std::abort();
    const std::string contents(file_size, 'F');
    if (::write(the_file, contents.data(), contents.size()) != static_cast<ssize_t>(contents.size())) std::abort();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    const std::uint8_t control = data[0], timing = data[1], h2 = data[2], h2b = data[3];
    std::string client(preface);
    client.append(reinterpret_cast<const char*>(data + 4), size - 4);

    m0::http::client_policy policy;
    policy.http2 = {true};
    policy.http2_settings = settings_for(h2, h2b);
    m0::fuzz::session_setup setup;
    if (control & 1) setup.limits.max_body_size = 64;
    setup.policy = &policy;
    // One tick of the connection's timer; two with the 1 ms ping, whose
    // timeout is checked on the tick after the one that sent it.
    if (h2 & 1) setup.last_pause = std::chrono::milliseconds(h2 & 0x40 ? 110 : 55);
    h2_handler handler(h2 & 0x80);
    const std::size_t fds = open_fds();
    const std::string received = m0::fuzz::run_session(setup, handler, control, timing, client);
    check(open_fds() == fds);
    h2_oracle().check_all(received);
    return 0;
}
