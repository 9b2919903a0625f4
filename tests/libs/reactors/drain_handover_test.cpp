// A connection a listener has taken but not yet handed to the engine when a
// drain begins is still answered. Such connections exist in every scheduler:
// the reactors scheduler's listeners post an accepted socket to the engine
// (it is in no session for a moment), the balanced scheduler queues the
// sockets its accept thread places until the reactor takes them. Their
// clients have sent a request to this process; nobody else will answer it.
// A reactor that leaves because no connection is live, or an engine that
// stops accepting at the drain, resets them.
#define BOOST_TEST_MODULE drain_handover
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <string>

#include <boost/asio/post.hpp>

#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/http.hpp>
#include <m0/reactors/reactor_group.hpp>

using namespace std::chrono_literals;
using boost::asio::ip::tcp;
using boost::system::error_code;

namespace {

// Holds the connections of its socket's backlog until the drain: cancel()
// takes them all and hands them over one accept at a time, the first from a
// handler it posts (as a listener does that accepted one just before), then
// fails the next accept with operation_aborted. Until then it takes nothing.
class handover_listener final : public m0::reactors::reactor_listener {
public:
    handover_listener(boost::asio::io_context& io, int fd) : io_(io), fd_(fd) {}

    void async_accept(accept_handler handler) override {
        handler_ = std::move(handler);
        if (cancelled_) boost::asio::post(io_, [this] { deliver(); });
    }

    tcp::endpoint local_endpoint() const override {
        tcp::endpoint ep;
        socklen_t len = static_cast<socklen_t>(ep.capacity());
        ::getsockname(fd_, ep.data(), &len);
        ep.resize(len);
        return ep;
    }

    void cancel() override {
        cancelled_ = true;
        for (int c; (c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) taken_.push_back(c);
        boost::asio::post(io_, [this] { deliver(); });
    }

    ~handover_listener() override {
        for (int c : taken_) ::close(c);
    }

private:
    void deliver() {
        if (!handler_) return;
        auto h = std::move(handler_);
        handler_ = nullptr;
        if (taken_.empty()) return h(boost::asio::error::operation_aborted, tcp::socket(io_));
        tcp::socket s(io_, tcp::v4(), taken_.front());
        taken_.pop_front();
        h(error_code{}, std::move(s));
    }

    boost::asio::io_context& io_;
    int fd_;
    accept_handler handler_;
    bool cancelled_ = false;
    std::deque<int> taken_;
};

class handover_placement final : public m0::reactors::connection_placement {
public:
    std::vector<tcp::endpoint> open(m0::scheduler_options&) override {
        boost::asio::io_context io;
        tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
        const auto bound = acceptor.local_endpoint();
        fd_ = acceptor.release();
        ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);  // cancel() takes until the backlog is empty
        return {bound};
    }
    std::vector<std::unique_ptr<m0::reactors::reactor_listener>> listeners_for(unsigned, boost::asio::io_context& io,
                                                                              m0::reactor_stats&) override {
        std::vector<std::unique_ptr<m0::reactors::reactor_listener>> out;
        out.push_back(std::make_unique<handover_listener>(io, fd_));
        return out;
    }
    void close() noexcept override {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

class hello_handler final : public m0::http::handler {
public:
    void on_request(m0::http::exchange_ptr ex) override {
        ex->respond(200, {{"Content-Type", "text/plain"}}, "hello");
    }
};

class hello_frontend final : public m0::frontend {
public:
    void start_reactor(m0::reactor_context& ctx) override { m0::http::serve(ctx, handler_); }

private:
    hello_handler handler_;
};

// A client that has connected and sent its request; reads the whole answer
// (until the server closes), or what the socket said instead.
class client {
public:
    explicit client(const tcp::endpoint& ep) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        timeval tv{10, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        BOOST_REQUIRE(::connect(fd_, ep.data(), static_cast<socklen_t>(ep.size())) == 0);
        const std::string request = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
        BOOST_REQUIRE(::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
    }
    ~client() { ::close(fd_); }
    std::string answer() {
        std::string out;
        char buf[4096];
        for (;;) {
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n > 0) {
                out.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0) return out;
            if (errno == EINTR) continue;
            return out + (errno == ECONNRESET ? "<reset>" : "<recv error " + std::to_string(errno) + ">");
        }
    }

private:
    int fd_ = -1;
};

}  // namespace

BOOST_AUTO_TEST_CASE(connections_a_listener_holds_at_the_drain_are_answered_before_the_reactor_leaves) {
    hello_frontend frontend;
    auto executor = m0::make_inline_executor();
    executor->start();
    m0::scheduler_options options;
    options.pin_cores = false;
    options.addresses = {tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0)};
    m0::reactors::reactor_group group(frontend, {executor.get()}, options, std::make_unique<handover_placement>());
    group.start();
    const auto ep = group.local_endpoints().at(0);
    // Connected (in the listening socket's backlog) and sent; no connection
    // is live on the reactor when the drain begins.
    client first(ep), second(ep), third(ep);
    const auto reports = group.drain(5s);
    for (auto* c : {&first, &second, &third}) {
        const auto text = c->answer();
        BOOST_TEST(text.rfind("HTTP/1.1 200 OK\r\n", 0) == 0, text);
        BOOST_TEST(text.find("\r\nConnection: close\r\n") != std::string::npos, text);
        BOOST_TEST(text.ends_with("\r\n\r\nhello"), text);
    }
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].accepted == 3u);
    BOOST_TEST(reports[0].requests == 3u);
    BOOST_TEST(reports[0].force_closed == 0u);
    BOOST_TEST(!reports[0].timed_out);
    executor->stop(2s);
}
