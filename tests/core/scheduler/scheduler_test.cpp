#define BOOST_TEST_MODULE scheduler
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "line_frontend.hpp"
#include "scheduler/scheduler.hpp"

using namespace std::chrono_literals;
using boost::asio::ip::tcp;

namespace {

// What line() returns when no line came: the peer closed (FIN), reset the
// connection, or sent nothing within the receive timeout. A test that expects
// a close must not pass on a hung connection.
const std::string eof = "<eof>";
const std::string reset = "<reset>";
const std::string timed_out = "<timeout>";

bool closed(const std::string& reply) { return reply == eof || reply == reset; }

// A blocking client with a receive timeout, so a broken scheduler fails the
// test instead of hanging it.
class client {
public:
    explicit client(const tcp::endpoint& ep, int timeout_ms = 10000) {
        fd_ = ::socket(ep.protocol().family(), SOCK_STREAM, 0);
        timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        connected_ = ::connect(fd_, ep.data(), static_cast<socklen_t>(ep.size())) == 0;
    }
    ~client() { if (fd_ >= 0) ::close(fd_); }
    bool connected() const { return connected_; }
    void send(const std::string& s) { (void)!::send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }
    // One line, or eof, reset or timed_out (a partial line is dropped).
    std::string line() {
        std::string out;
        for (;;) {
            char c;
            const ssize_t n = ::recv(fd_, &c, 1, 0);
            if (n == 1) {
                if (c == '\n') return out;
                out += c;
            } else if (n == 0) {
                return eof;
            } else if (errno == ECONNRESET) {
                return reset;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return timed_out;
            } else if (errno != EINTR) {
                return "<recv error " + std::to_string(errno) + ">";
            }
        }
    }
    std::string ask(const std::string& s) { send(s + "\n"); return line(); }

private:
    int fd_ = -1;
    bool connected_ = false;
};

m0::scheduler_options options(unsigned workers, m0::listener_strategy strategy = m0::listener_strategy::reuseport,
                              std::size_t addresses = 1) {
    m0::scheduler_options o;
    o.workers = workers;
    o.listener = strategy;
    o.pin_cores = true;
    for (std::size_t i = 0; i < addresses; ++i)
        o.addresses.push_back(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    return o;
}

struct fixture {
    m0::test::line_frontend frontend;
    std::unique_ptr<m0::executor> executor = m0::make_inline_executor();
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(starts_serves_and_stops_with_1_2_4_and_256_workers, fixture) {
    for (unsigned n : {1u, 2u, 4u, 256u}) {
        m0::scheduler s(frontend, *executor, options(n));
        s.start();
        BOOST_TEST(s.reactor_count() == n);
        for (unsigned i = 0; i < n; ++i) BOOST_TEST(s.is_running(i));
        client c(s.local_endpoints().at(0));
        BOOST_TEST(c.ask("fast").rfind("ok ", 0) == 0);
        auto reports = s.drain(5s);
        BOOST_TEST(reports.size() == n);
        for (auto& r : reports) BOOST_TEST(!r.crashed);
        BOOST_TEST(s.crashed_worker_count() == 0u);
    }
}

BOOST_FIXTURE_TEST_CASE(refuses_0_and_257_workers_before_starting, fixture) {
    for (unsigned n : {0u, 257u}) {
        try {
            m0::scheduler s(frontend, *executor, options(n));
            BOOST_FAIL("accepted " << n << " workers");
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find("between 1 and 256") != std::string::npos);
            BOOST_TEST(std::string(e.what()).find(std::to_string(n)) != std::string::npos);
        }
    }
}

BOOST_FIXTURE_TEST_CASE(shared_listener_serves_from_every_worker, fixture) {
    m0::scheduler s(frontend, *executor, options(2, m0::listener_strategy::shared));
    s.start();
    // Whichever worker takes the first connection is then blocked by "hold":
    // the second connection can only be accepted by the other worker.
    client first(s.local_endpoints().at(0));
    first.send("hold\n");
    while (s.stats(0).in_flight.load() + s.stats(1).in_flight.load() == 0) std::this_thread::sleep_for(1ms);
    const unsigned holding = s.stats(0).in_flight.load() == 1 ? 0 : 1;
    client second(s.local_endpoints().at(0));
    BOOST_TEST(second.ask("fast") == "ok " + std::to_string(1 - holding));
    frontend.release_holds();
    BOOST_TEST(first.line() == "held " + std::to_string(holding));
    s.drain(5s);
}

BOOST_FIXTURE_TEST_CASE(every_address_is_served_by_every_strategy, fixture) {
    for (auto strategy : {m0::listener_strategy::reuseport, m0::listener_strategy::shared}) {
        m0::scheduler s(frontend, *executor, options(2, strategy, 2));
        s.start();
        auto eps = s.local_endpoints();
        BOOST_REQUIRE(eps.size() == 2u);
        BOOST_TEST(eps[0].port() != eps[1].port());
        for (auto& ep : eps) {
            client c(ep);
            BOOST_TEST(c.ask("fast").rfind("ok ", 0) == 0);
        }
        s.drain(5s);
    }
}

BOOST_FIXTURE_TEST_CASE(drain_lets_a_slow_request_finish_and_reports_it_drained, fixture) {
    m0::scheduler s(frontend, *executor, options(1));
    s.start();
    client c(s.local_endpoints().at(0));
    c.send("slow 300\n");
    while (s.stats(0).in_flight.load() == 0) std::this_thread::sleep_for(1ms);
    std::vector<m0::worker_report> reports;
    std::thread stopper([&] { reports = s.drain(10s); });
    BOOST_TEST(c.line() == "done 0");
    stopper.join();
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].connections_at_drain == 1u);
    BOOST_TEST(reports[0].drained == 1u);
    BOOST_TEST(reports[0].force_closed == 0u);
    BOOST_TEST(!reports[0].timed_out);
}

BOOST_FIXTURE_TEST_CASE(drain_force_closes_a_request_that_outlives_the_timeout, fixture) {
    m0::scheduler s(frontend, *executor, options(1));
    s.start();
    client c(s.local_endpoints().at(0));
    c.send("slow 60000\n");
    while (s.stats(0).in_flight.load() == 0) std::this_thread::sleep_for(1ms);
    auto reports = s.drain(200ms);
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].force_closed == 1u);
    BOOST_TEST(reports[0].in_flight_at_deadline == 1u);
    BOOST_TEST(reports[0].timed_out);
    BOOST_TEST(closed(c.line()));  // closed, no answer
}

BOOST_FIXTURE_TEST_CASE(idle_keepalive_connections_do_not_hold_up_a_drain, fixture) {
    m0::scheduler s(frontend, *executor, options(2));
    s.start();
    std::vector<std::unique_ptr<client>> idle;
    for (int i = 0; i < 8; ++i) {
        idle.push_back(std::make_unique<client>(s.local_endpoints().at(0)));
        BOOST_REQUIRE(idle.back()->ask("fast").rfind("ok ", 0) == 0);
    }
    // A 60 s timeout: if idle connections held the drain up, it would time out.
    auto reports = s.drain(60s);
    std::uint64_t open = 0, force = 0;
    for (auto& r : reports) {
        open += r.connections_at_drain;
        force += r.force_closed;
        BOOST_TEST(!r.timed_out);
    }
    BOOST_TEST(open == 8u);
    BOOST_TEST(force == 0u);
    for (auto& c : idle) BOOST_TEST(closed(c->line()));
}

BOOST_FIXTURE_TEST_CASE(new_connections_after_stop_are_refused_not_hung, fixture) {
    m0::scheduler s(frontend, *executor, options(2));
    s.start();
    auto ep = s.local_endpoints().at(0);
    s.drain(5s);
    client late(ep);
    // Refused at connect, or (should the kernel still complete the
    // handshake) closed at once: never left hanging.
    if (late.connected()) BOOST_TEST(closed(late.ask("fast")));
}

BOOST_FIXTURE_TEST_CASE(a_crashing_worker_is_counted_and_the_others_keep_serving, fixture) {
    m0::scheduler s(frontend, *executor, options(2, m0::listener_strategy::shared));
    s.start();
    {
        client c(s.local_endpoints().at(0));
        c.send("throw\n");
        BOOST_TEST(closed(c.line()));
    }
    for (int i = 0; i < 200 && s.crashed_worker_count() == 0; ++i) std::this_thread::sleep_for(10ms);
    BOOST_TEST(s.crashed_worker_count() == 1u);
    BOOST_TEST(s.is_running(0) != s.is_running(1));
    for (int i = 0; i < 10; ++i) {
        client c(s.local_endpoints().at(0));
        BOOST_TEST(c.ask("fast").rfind("ok ", 0) == 0);
    }
    auto reports = s.drain(5s);
    unsigned crashed = 0;
    for (auto& r : reports) {
        if (r.crashed) {
            ++crashed;
            BOOST_TEST(r.error.find("asked to crash") != std::string::npos);
        }
    }
    BOOST_TEST(crashed == 1u);
}

BOOST_AUTO_TEST_CASE(a_worker_that_cannot_start_fails_start_and_joins_the_rest) {
    m0::test::line_frontend frontend(/*fail_worker=*/2);
    auto executor = m0::make_inline_executor();
    m0::scheduler s(frontend, *executor, options(4));
    try {
        s.start();
        BOOST_FAIL("start() succeeded");
    } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()).find("reactor 2") != std::string::npos);
        BOOST_TEST(std::string(e.what()).find("refused to start") != std::string::npos);
    }
}

BOOST_FIXTURE_TEST_CASE(drain_and_shutdown_are_idempotent, fixture) {
    m0::scheduler s(frontend, *executor, options(2));
    s.start();
    auto first = s.drain(1s);
    auto second = s.drain(1s);
    s.shutdown();
    s.shutdown();
    BOOST_TEST(first.size() == second.size());
}

BOOST_FIXTURE_TEST_CASE(hard_stop_with_zero_timeout_closes_requests_in_flight, fixture) {
    m0::scheduler s(frontend, *executor, options(1));
    s.start();
    client c(s.local_endpoints().at(0));
    c.send("slow 60000\n");
    while (s.stats(0).in_flight.load() == 0) std::this_thread::sleep_for(1ms);
    auto reports = s.drain(0ms);
    BOOST_TEST(reports.at(0).force_closed == 1u);
    BOOST_TEST(closed(c.line()));
}
