// The load generator of bench/ws_broadcast: N WebSocket clients on one
// thread (Boost.Beast over Asio), each sending M text messages to a server
// that rebroadcasts every message to every client. A Python client would
// itself be the ceiling at these rates; this one spends a few hundred
// nanoseconds per message, and reports its own CPU so a run can show it was
// not the bottleneck.
//
//   ws_broadcast_client HOST PORT PATH CLIENTS MESSAGES SIZE WINDOW TIMEOUT_S
//
// 1. Connects CLIENTS clients (the server registers each before its 101).
// 2. Probe: client 0 sends "probe"; every client must receive exactly that
//    text message first, else the server answers wrongly (exit 1).
// 3. Prints "ready", waits for a line "go" on stdin (the caller samples the
//    server's CPU meanwhile).
// 4. Each client sends MESSAGES messages of SIZE bytes ("<client>:<seq>:" then
//    'x' padding), at most WINDOW of its own in flight: a message stays in
//    flight until its broadcast copy comes back to its sender. Every client
//    must receive every message (CLIENTS * MESSAGES each), each SIZE bytes.
// 5. Prints one line, "received=R seconds=S cpu=C" (C: this process's user +
//    system CPU seconds over the run), closes every connection and exits 0.
//
// Any error (connect, handshake, a closed connection, a wrong message, the
// TIMEOUT_S deadline) prints what happened to stderr and exits 1.
#include "client_support.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>


#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {

[[noreturn]] void fail(const std::string& what) { bench::fail("ws_broadcast_client", what); }

struct options {
    std::string host, port, path;
    int clients = 0;
    long messages = 0;
    std::size_t size = 0;
    int window = 0;
    int timeout_s = 0;
};

class run;

class client {
public:
    client(run& r, net::io_context& ioc, int id) : run_(r), ws_(ioc), id_(id) {}
    void start(const tcp::resolver::results_type& addrs);
    void send_more();
    void close();

private:
    void on_connect(beast::error_code ec);
    void on_handshake(beast::error_code ec);
    void do_read();
    void on_read(beast::error_code ec, std::size_t);
    void on_write(beast::error_code ec, std::size_t);

    run& run_;
    websocket::stream<tcp::socket> ws_;
    beast::flat_buffer buffer_;
    std::string out_;
    int id_;
    long sent_ = 0;
    long in_flight_ = 0;
    long received_ = 0;
    bool writing_ = false;
    bool probed_ = false;
};

// The phases of one run, shared by every client (one thread: no locks).
class run {
public:
    run(net::io_context& ioc, options opt) : ioc_(ioc), opt_(std::move(opt)), stdin_(ioc, ::dup(0)), deadline_(ioc) {}

    void start() {
        tcp::resolver resolver(ioc_);
        auto addrs = resolver.resolve(opt_.host, opt_.port);
        deadline_.expires_after(std::chrono::seconds(opt_.timeout_s));
        deadline_.async_wait([this](beast::error_code ec) {
            if (!ec)
                fail("timed out after " + std::to_string(opt_.timeout_s) + " s: " + state());
        });
        for (int i = 0; i < opt_.clients; ++i)
            clients_.push_back(std::make_unique<client>(*this, ioc_, i));
        for (auto& c : clients_)
            c->start(addrs);
    }

    const options& opt() const { return opt_; }
    bool going() const { return going_; }
    bool finished() const { return finished_; }

    void connected() {
        if (++connected_ == opt_.clients)
            clients_[0]->send_more();  // the probe
    }

    void probed() {
        if (++probed_ < opt_.clients)
            return;
        std::cout << "ready" << std::endl;
        net::async_read_until(stdin_, net::dynamic_buffer(line_), '\n', [this](beast::error_code ec, std::size_t) {
            if (ec || line_.rfind("go", 0) != 0)
                fail("expected \"go\" on stdin");
            going_ = true;
            started_ = std::chrono::steady_clock::now();
            cpu_start_ = bench::cpu_seconds();
            for (auto& c : clients_)
                c->send_more();
        });
    }

    void received() { ++received_; }

    void client_done() {
        if (++done_ < opt_.clients)
            return;
        finished_ = true;
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        std::cout << "received=" << received_ << " seconds=" << seconds << " cpu=" << bench::cpu_seconds() - cpu_start_
                  << std::endl;
        deadline_.cancel();
        stdin_.close();
        for (auto& c : clients_)
            c->close();
    }

    std::string state() const {
        return std::to_string(connected_) + "/" + std::to_string(opt_.clients) + " connected, " +
               std::to_string(probed_) + " probed, " + std::to_string(done_) + " done, " +
               std::to_string(received_) + " of " +
               std::to_string(static_cast<long long>(opt_.clients) * opt_.clients * opt_.messages) + " received";
    }

private:
    net::io_context& ioc_;
    options opt_;
    net::posix::stream_descriptor stdin_;
    net::steady_timer deadline_;
    std::string line_;
    std::vector<std::unique_ptr<client>> clients_;
    int connected_ = 0, probed_ = 0, done_ = 0;
    long long received_ = 0;
    bool going_ = false, finished_ = false;
    std::chrono::steady_clock::time_point started_;
    double cpu_start_ = 0;
};

void client::start(const tcp::resolver::results_type& addrs) {
    net::async_connect(ws_.next_layer(), addrs,
                       [this](beast::error_code ec, const tcp::endpoint&) { on_connect(ec); });
}

void client::on_connect(beast::error_code ec) {
    if (ec)
        fail("client " + std::to_string(id_) + ": connect: " + ec.message());
    ws_.next_layer().set_option(tcp::no_delay(true));
    ws_.read_message_max(1 << 20);
    ws_.auto_fragment(false);
    ws_.text(true);
    const auto host = run_.opt().host + ":" + run_.opt().port;
    ws_.async_handshake(host, run_.opt().path, [this](beast::error_code e) { on_handshake(e); });
}

void client::on_handshake(beast::error_code ec) {
    if (ec)
        fail("client " + std::to_string(id_) + ": WebSocket handshake: " + ec.message());
    do_read();
    run_.connected();
}

void client::do_read() {
    ws_.async_read(buffer_, [this](beast::error_code ec, std::size_t n) { on_read(ec, n); });
}

void client::on_read(beast::error_code ec, std::size_t) {
    if (run_.finished())
        return;  // closing: what is still in flight does not count
    if (ec)
        fail("client " + std::to_string(id_) + ": read: " + ec.message() + " (" + run_.state() + ")");
    const auto data = buffer_.cdata();
    const std::string_view msg(static_cast<const char*>(data.data()), data.size());
    if (!ws_.got_text())
        fail("client " + std::to_string(id_) + ": a binary message, expected text");
    if (!probed_) {
        if (msg != "probe")
            fail("client " + std::to_string(id_) + ": first message \"" + std::string(msg.substr(0, 64)) +
                 "\", expected the probe \"probe\"");
        probed_ = true;
        buffer_.consume(buffer_.size());
        do_read();
        run_.probed();
        return;
    }
    if (!run_.going())
        fail("client " + std::to_string(id_) + ": a message before any was sent");
    if (msg.size() != run_.opt().size)
        fail("client " + std::to_string(id_) + ": a message of " + std::to_string(msg.size()) + " bytes, expected " +
             std::to_string(run_.opt().size));
    int from = -1;
    std::from_chars(msg.data(), msg.data() + msg.size(), from);
    buffer_.consume(buffer_.size());
    ++received_;
    run_.received();
    if (from == id_) {
        --in_flight_;
        send_more();
    }
    if (received_ == static_cast<long>(run_.opt().clients) * run_.opt().messages)
        run_.client_done();
    do_read();
}

void client::send_more() {
    if (writing_)
        return;
    if (!run_.going()) {  // the probe, from client 0
        writing_ = true;
        out_ = "probe";
    } else {
        if (sent_ == run_.opt().messages || in_flight_ >= run_.opt().window)
            return;
        out_ = std::to_string(id_) + ":" + std::to_string(sent_) + ":";
        out_.resize(run_.opt().size, 'x');
        ++sent_;
        ++in_flight_;
        writing_ = true;
    }
    ws_.async_write(net::buffer(out_), [this](beast::error_code ec, std::size_t n) { on_write(ec, n); });
}

void client::on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (run_.finished())
        return;
    if (ec)
        fail("client " + std::to_string(id_) + ": write: " + ec.message());
    if (run_.going())
        send_more();
}

void client::close() {
    ws_.async_close(websocket::close_code::normal, [](beast::error_code) {});
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 9) {
        std::cerr << "usage: ws_broadcast_client HOST PORT PATH CLIENTS MESSAGES SIZE WINDOW TIMEOUT_S\n";
        return 2;
    }
    options opt{argv[1], argv[2], argv[3], std::atoi(argv[4]), std::atol(argv[5]),
                static_cast<std::size_t>(std::atol(argv[6])), std::atoi(argv[7]), std::atoi(argv[8])};
    if (opt.clients < 1 || opt.messages < 1 || opt.window < 1 || opt.timeout_s < 1 || opt.size < 16)
        fail("CLIENTS, MESSAGES, WINDOW and TIMEOUT_S must be >= 1, SIZE >= 16");
    net::io_context ioc(1);
    run r(ioc, opt);
    r.start();
    ioc.run();
    return 0;
}
