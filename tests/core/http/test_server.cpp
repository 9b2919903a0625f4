#include "test_server.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace m0::test {

namespace asio = boost::asio;
using m0::http::exchange_ptr;

test_listener::test_listener(asio::io_context& io)
    : acceptor_(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}

void test_listener::async_accept(accept_handler handler) {
    acceptor_.async_accept([h = std::move(handler)](boost::system::error_code ec, asio::ip::tcp::socket s) mutable {
        h(ec, std::move(s));
    });
}

asio::ip::tcp::endpoint test_listener::local_endpoint() const { return acceptor_.local_endpoint(); }

void test_listener::close() {
    boost::system::error_code ec;
    acceptor_.close(ec);
}

namespace {

int query_int(std::string_view query, std::string_view key, int fallback) {
    const auto pos = query.find(key);
    if (pos == std::string_view::npos) return fallback;
    int v = fallback;
    const auto start = query.data() + pos + key.size() + 1;
    std::from_chars(start, query.data() + query.size(), v);
    return v;
}

// Writes chunk i of three from a timer, then ends.
void stream_later(exchange_ptr ex, int i) {
    auto timer = std::make_shared<asio::steady_timer>(ex->io(), std::chrono::milliseconds(5));
    timer->async_wait([ex, timer, i](const boost::system::error_code&) {
        if (i == 3) {
            ex->end();
            return;
        }
        ex->write("chunk" + std::to_string(i + 1));
        stream_later(ex, i + 1);
    });
}

std::uint64_t file_size(const std::string& path) {
    struct stat st{};
    ::stat(path.c_str(), &st);
    return static_cast<std::uint64_t>(st.st_size);
}

using body_done = std::function<void(exchange_ptr, std::string)>;

// Pulls the whole body `max` bytes at a time, then hands it to `done`.
void pull_all(test_handler& h, exchange_ptr ex, std::size_t max, std::shared_ptr<std::string> body, body_done done) {
    ex->read_body(max, [&h, ex, max, body, done](boost::system::error_code ec, std::string chunk, bool last) {
        if (ec) {
            h.pull_error = ec.value();
            return;  // the engine answered (413, 408) or the client is gone
        }
        ++h.pulls;
        if (chunk.size() > max) h.pull_error = -1;
        body->append(chunk);
        if (last)
            done(ex, std::move(*body));
        else
            pull_all(h, ex, max, body, done);
    });
}

// Answers with `body` once the client has shut down its sending side;
// counts the on_peer_eof and on_client_gone callbacks that run.
void answer_at_peer_eof(test_handler& h, exchange_ptr ex, std::string body) {
    ex->on_client_gone([&h, ex] { ++h.gone_calls; });
    ex->on_peer_eof([&h, ex, body = std::move(body)]() mutable {
        ++h.peer_eof_calls;
        ex->respond(200, {}, "peer eof after " + body);
    });
}

// Echoes every byte read from an upgraded stream until its end.
void echo_stream(std::shared_ptr<m0::http::byte_stream> s) {
    s->async_read([s](boost::system::error_code ec, std::string_view data) {
        if (ec) {
            s->close();
            return;
        }
        s->write(std::string(data));
        echo_stream(s);
    });
}

}  // namespace

bool test_handler::stream_body(const m0::http::request& req) { return req.path.substr(0, 5) == "/pull"; }

void test_handler::on_request(exchange_ptr ex) {
    const auto& r = ex->req();
    if (r.path == "/pull-echo") {
        pull_all(*this, ex, static_cast<std::size_t>(query_int(r.query, "max", 4096)), std::make_shared<std::string>(),
                 [](exchange_ptr e, std::string body) { e->respond(200, {}, std::move(body)); });
    } else if (r.path == "/pull-wait-peer-eof") {
        pull_all(*this, ex, 4096, std::make_shared<std::string>(),
                 [this](exchange_ptr e, std::string body) { answer_at_peer_eof(*this, std::move(e), std::move(body)); });
    } else if (r.path == "/wait-peer-eof") {
        answer_at_peer_eof(*this, ex, r.body);
    } else if (r.path == "/watch-peer-eof") {
        ex->on_peer_eof([this, ex] { ++peer_eof_calls; });
        ex->respond(200, {}, "watched");
    } else if (r.path == "/pull-wait-gone") {
        ex->on_client_gone([this, ex] { ++gone_calls; });
    } else if (r.path == "/pull-ignore") {
        ex->respond(200, {}, "ignored");
    } else if (r.path == "/wait-gone") {
        ex->on_client_gone([this, ex] { ++gone_calls; });
    } else if (r.path == "/held") {
        ex->begin(200, {}, std::nullopt);
        ex->write("tick;");
        ex->on_drain([ex] {
            ex->write("done");
            ex->end();
        });
    } else if (r.path == "/drained-twice") {
        ex->begin(200, {}, std::nullopt);
        ex->write("1");
        auto count = std::make_shared<int>(0);
        for (int i = 0; i < 2; ++i) {
            ex->when_drained(0, [this, ex, count] {
                ++drained_calls;
                if (++*count == 2) {
                    ex->write("2");
                    ex->end();
                }
            });
        }
    } else if (r.path == "/upgrade") {
        auto s = ex->upgrade({{"Upgrade", "echo"}});
        if (!s) {
            ex->respond(400, {}, "cannot upgrade");
            return;
        }
        s->on_drain([this, s] {
            ++upgrade_drain_calls;
            s->write_shared(std::make_shared<const std::string>("bye"));
            s->close();
        });
        echo_stream(s);
    } else if (r.path == "/fixed") {
        ex->respond(200, {{"Content-Type", "text/plain"}}, "Hello, World!");
    } else if (r.path == "/echo") {
        ex->respond(200, {}, r.body);
    } else if (r.path.substr(0, 8) == "/inspect") {
        std::string out;
        out.append(r.method).append("|").append(r.target).append("|").append(r.path).append("|");
        out.append(r.query).append("|").append(r.header("x-test").value_or("-"));
        ex->respond(200, {}, std::move(out));
    } else if (r.path == "/stream") {
        ex->begin(200, {{"Content-Type", "text/plain"}}, std::nullopt);
        ex->write("chunk1");
        ex->write("chunk2");
        ex->write("chunk3");
        ex->end();
    } else if (r.path == "/stream-trailers") {
        ex->begin(200, {{"Trailer", "x-sum"}}, std::nullopt);
        ex->write("chunk1");
        // An engine-owned name is dropped from trailers as from headers.
        ex->end_with_trailers({{"x-sum", "42"}, {"Content-Length", "6"}, {"x-b", "2"}});
    } else if (r.path == "/stream-late") {
        ex->begin(200, {}, std::nullopt);
        stream_later(ex, 0);
    } else if (r.path == "/delay") {
        auto timer = std::make_shared<asio::steady_timer>(ex->io(), std::chrono::milliseconds(query_int(r.query, "ms", 100)));
        timer->async_wait([this, ex, timer](const boost::system::error_code&) {
            delayed_saw_gone = ex->client_gone();
            ex->respond(200, {}, "late");
            ++delayed_answers;
        });
    } else if (r.path == "/file" || r.path == "/file-chunked") {
        const int fd = ::open(file_path.c_str(), O_RDONLY | O_CLOEXEC);
        const auto size = file_size(file_path);
        ex->begin(200, {{"Content-Type", "application/octet-stream"}},
                  r.path == "/file" ? std::optional<std::uint64_t>(size) : std::nullopt);
        ex->write_file(fd, 0, size);
        ex->end();
    } else if (r.path == "/borrowed") {
        static const std::vector<m0::http::response_header> headers{{"Content-Type", "text/plain"},
                                                                    {"X-Route", "borrowed"}};
        static const std::string body = "borrowed body";
        ex->respond_borrowed(200, headers, body);
    } else if (r.path == "/interim") {
        ex->respond(103, {{"Link", "</a.css>; rel=preload"}}, "");
    } else if (r.path == "/interim-begin") {
        ex->begin(102, {}, std::nullopt);
        ex->write("ignored");
        ex->end();
    } else if (r.path == "/stream-blocking") {
        // Stands for a WSGI generator run by the inline executor: it blocks
        // the reactor between its chunks.
        ex->begin(200, {}, std::nullopt);
        ex->write("chunk1");
        stream_was_released = eventually([this] { return release_stream.load(); });
        ex->write("chunk2");
        ex->end();
    } else if (r.path == "/hold") {
        {
            std::lock_guard lock(hold_mutex);
            hold_saw_accepted.push_back(stats->accepted.load());
        }
        eventually([this] { return release_hold.load(); });
        ex->respond(200, {}, "held");
    } else {
        ex->respond(404, {}, "not found");
    }
}

test_server::test_server(m0::http_limits limits, std::shared_ptr<const m0::http::client_policy> policy)
    : work_(asio::make_work_guard(io_)), limits_(limits), policy_(std::move(policy)), listener_(io_) {
    port_ = listener_.local_endpoint().port();
    ctx_.io = &io_;
    ctx_.listeners.push_back(&listener_);
    ctx_.stats = &stats_;
    handler_.stats = &stats_;
    ctx_.limits = &limits_;
    ctx_.client_policy = policy_.get();
    thread_ = std::thread([this] { io_.run(); });
    run_on_worker([this] { m0::http::serve(ctx_, handler_); });
}

test_server::~test_server() {
    // Close everything, then let the io_context run out of work so every
    // handler completes while the objects it refers to still exist.
    run_on_worker([this] {
        ctx_.run_force_close_hooks();
        listener_.close();
    });
    work_.reset();
    thread_.join();
}

void test_server::run_on_worker(std::function<void()> fn) {
    std::promise<void> done;
    asio::post(io_, [&] {
        fn();
        done.set_value();
    });
    done.get_future().wait();
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return pred();
}

}  // namespace m0::test
