// The contract every scheduler plugin keeps, run over each of them (and both
// listener strategies of `reactors`): start and stop with 1..256 reactors,
// every address served, exact drain reports, a crashed reactor counted, the
// bounded stop, idempotent drain and shutdown.
#define BOOST_TEST_MODULE scheduler_contract
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <system_error>
#include <thread>

#include "line_frontend.hpp"
#include "scheduler_plugins.hpp"

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

namespace data = boost::unit_test::data;

std::vector<std::string> labels(std::initializer_list<const char*> only = {}) {
    std::vector<std::string> out;
    for (const auto& s : m0::test::every_scheduler())
        if (only.size() == 0 || std::find(only.begin(), only.end(), s.label) != only.end()) out.push_back(s.label);
    return out;
}

struct fixture {
    m0::test::line_frontend frontend;
    std::unique_ptr<m0::executor> executor = m0::make_inline_executor();
    std::unique_ptr<m0::reactor_set> reactors(const std::string& label, unsigned n, std::size_t addresses = 1) {
        return m0::test::make_reactors(m0::test::scheduler_yaml(label), frontend, {executor.get()},
                                       m0::test::loopback_options(n, addresses));
    }
};

// Polls a condition the reactors reach asynchronously, up to 10 s.
template <class Condition>
bool eventually(Condition done) {
    for (int i = 0; i < 10000; ++i) {
        if (done()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return done();
}

}  // namespace

BOOST_DATA_TEST_CASE_F(fixture, starts_serves_and_stops_with_1_2_4_and_256_reactors, data::make(labels()), label) {
    for (unsigned n : {1u, 2u, 4u, 256u}) {
        auto s = reactors(label, n);
        s->start();
        BOOST_TEST(s->reactor_count() == n);
        for (unsigned i = 0; i < n; ++i) BOOST_TEST(s->is_running(i));
        client c(s->local_endpoints().at(0));
        BOOST_TEST(c.ask("fast").rfind("ok ", 0) == 0);
        auto reports = s->drain(5s);
        BOOST_TEST(reports.size() == n);
        for (auto& r : reports) BOOST_TEST(!r.crashed);
        BOOST_TEST(s->crashed_reactor_count() == 0u);
    }
}

BOOST_DATA_TEST_CASE_F(fixture, refuses_0_and_257_reactors_before_starting, data::make(labels()), label) {
    for (unsigned n : {0u, 257u}) {
        try {
            auto s = reactors(label, n);
            BOOST_FAIL("accepted " << n << " reactors");
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(std::string(e.what()).find("between 1 and 256") != std::string::npos);
            BOOST_TEST(std::string(e.what()).find(std::to_string(n)) != std::string::npos);
        }
    }
}

BOOST_DATA_TEST_CASE_F(fixture, refuses_an_address_another_program_listens_on, data::make(labels()), label) {
    // Another program's listener, without SO_REUSEPORT.
    const int other = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::bind(other, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    BOOST_REQUIRE(::listen(other, 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(other, reinterpret_cast<sockaddr*>(&addr), &len);
    auto options = m0::test::loopback_options(2);
    options.addresses[0].port(ntohs(addr.sin_port));
    auto s = m0::test::make_reactors(m0::test::scheduler_yaml(label), frontend, {executor.get()}, options);
    try {
        s->start();
        BOOST_FAIL("started on an address in use");
    } catch (const std::system_error& e) {
        BOOST_TEST(e.code().value() == EADDRINUSE);
        BOOST_TEST(std::string(e.what()).find(std::to_string(ntohs(addr.sin_port))) != std::string::npos);
    }
    ::close(other);
}

// A reactor blocked in a handler: the next connection is placed on (or, with
// a shared listener, taken by) the other one. Not so with reuseport, whose
// kernel hash may pick the blocked reactor.
BOOST_DATA_TEST_CASE_F(fixture, a_blocked_reactor_leaves_new_connections_to_the_others,
                       data::make(labels({"reactors-shared", "balanced"})), label) {
    auto s = reactors(label, 2);
    s->start();
    client first(s->local_endpoints().at(0));
    first.send("hold\n");
    BOOST_REQUIRE(eventually([&] { return s->stats(0).in_flight.load() + s->stats(1).in_flight.load() == 1; }));
    const unsigned holding = s->stats(0).in_flight.load() == 1 ? 0 : 1;
    client second(s->local_endpoints().at(0));
    BOOST_TEST(second.ask("fast") == "ok " + std::to_string(1 - holding));
    frontend.release_holds();
    BOOST_TEST(first.line() == "held " + std::to_string(holding));
    s->drain(5s);
}

BOOST_DATA_TEST_CASE_F(fixture, every_address_is_served, data::make(labels()), label) {
    auto s = reactors(label, 2, 2);
    s->start();
    auto eps = s->local_endpoints();
    BOOST_REQUIRE(eps.size() == 2u);
    BOOST_TEST(eps[0].port() != eps[1].port());
    for (auto& ep : eps) {
        client c(ep);
        BOOST_TEST(c.ask("fast").rfind("ok ", 0) == 0);
    }
    s->drain(5s);
}

BOOST_DATA_TEST_CASE_F(fixture, drain_lets_a_slow_request_finish_and_reports_it_drained, data::make(labels()), label) {
    auto s = reactors(label, 1);
    s->start();
    client c(s->local_endpoints().at(0));
    c.send("slow 300\n");
    BOOST_REQUIRE(eventually([&] { return s->stats(0).in_flight.load() == 1; }));
    std::vector<m0::reactor_report> reports;
    std::thread stopper([&] { reports = s->drain(10s); });
    BOOST_TEST(c.line() == "done 0");
    stopper.join();
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].connections_at_drain == 1u);
    BOOST_TEST(reports[0].drained == 1u);
    BOOST_TEST(reports[0].force_closed == 0u);
    BOOST_TEST(reports[0].accepted == 1u);
    BOOST_TEST(!reports[0].timed_out);
}

BOOST_DATA_TEST_CASE_F(fixture, drain_force_closes_a_request_that_outlives_the_timeout, data::make(labels()), label) {
    auto s = reactors(label, 1);
    s->start();
    client c(s->local_endpoints().at(0));
    c.send("slow 60000\n");
    BOOST_REQUIRE(eventually([&] { return s->stats(0).in_flight.load() == 1; }));
    auto reports = s->drain(200ms);
    BOOST_REQUIRE(reports.size() == 1u);
    BOOST_TEST(reports[0].force_closed == 1u);
    BOOST_TEST(reports[0].in_flight_at_deadline == 1u);
    BOOST_TEST(reports[0].timed_out);
    BOOST_TEST(closed(c.line()));  // closed, no answer
}

BOOST_DATA_TEST_CASE_F(fixture, idle_keepalive_connections_do_not_hold_up_a_drain, data::make(labels()), label) {
    auto s = reactors(label, 2);
    s->start();
    std::vector<std::unique_ptr<client>> idle;
    for (int i = 0; i < 8; ++i) {
        idle.push_back(std::make_unique<client>(s->local_endpoints().at(0)));
        BOOST_REQUIRE(idle.back()->ask("fast").rfind("ok ", 0) == 0);
    }
    // A 60 s timeout: if idle connections held the drain up, it would time out.
    auto reports = s->drain(60s);
    std::uint64_t open = 0, force = 0, accepted = 0;
    for (auto& r : reports) {
        open += r.connections_at_drain;
        force += r.force_closed;
        accepted += r.accepted;
        BOOST_TEST(!r.timed_out);
    }
    BOOST_TEST(open == 8u);
    BOOST_TEST(accepted == 8u);
    BOOST_TEST(force == 0u);
    for (auto& c : idle) BOOST_TEST(closed(c->line()));
}

BOOST_DATA_TEST_CASE_F(fixture, new_connections_after_stop_are_refused_not_hung, data::make(labels()), label) {
    auto s = reactors(label, 2);
    s->start();
    auto ep = s->local_endpoints().at(0);
    s->drain(5s);
    client late(ep);
    // Refused at connect, or (should the kernel still complete the
    // handshake) closed at once: never left hanging.
    if (late.connected()) BOOST_TEST(closed(late.ask("fast")));
}

BOOST_DATA_TEST_CASE_F(fixture, a_crashing_reactor_is_counted_and_reported, data::make(labels()), label) {
    auto s = reactors(label, 2);
    s->start();
    {
        client c(s->local_endpoints().at(0));
        c.send("throw\n");
        BOOST_TEST(closed(c.line()));
    }
    BOOST_REQUIRE(eventually([&] { return s->crashed_reactor_count() == 1u; }));
    BOOST_TEST(s->is_running(0) != s->is_running(1));
    // The survivor serves every new connection where the scheduler chooses
    // the reactor (not with reuseport: the kernel's hash may pick the dead
    // reactor's socket).
    if (label != "reactors") {
        for (int i = 0; i < 10; ++i) {
            client c(s->local_endpoints().at(0));
            BOOST_TEST(c.ask("fast").rfind("ok ", 0) == 0);
        }
    }
    auto reports = s->drain(5s);
    unsigned crashed = 0;
    for (auto& r : reports) {
        if (r.crashed) {
            ++crashed;
            BOOST_TEST(r.error.find("asked to crash") != std::string::npos);
        }
    }
    BOOST_TEST(crashed == 1u);
}

BOOST_DATA_TEST_CASE(a_reactor_that_cannot_start_fails_start_and_joins_the_rest, data::make(labels()), label) {
    m0::test::line_frontend frontend(/*fail_worker=*/2);
    auto executor = m0::make_inline_executor();
    auto s = m0::test::make_reactors(m0::test::scheduler_yaml(label), frontend, {executor.get()},
                                     m0::test::loopback_options(4));
    try {
        s->start();
        BOOST_FAIL("start() succeeded");
    } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()).find("reactor 2") != std::string::npos);
        BOOST_TEST(std::string(e.what()).find("refused to start") != std::string::npos);
    }
}

BOOST_DATA_TEST_CASE_F(fixture, drain_and_shutdown_are_idempotent, data::make(labels()), label) {
    auto s = reactors(label, 2);
    s->start();
    auto first = s->drain(1s);
    auto second = s->drain(1s);
    s->shutdown();
    s->shutdown();
    BOOST_TEST(first.size() == second.size());
}

BOOST_DATA_TEST_CASE_F(fixture, hard_stop_with_zero_timeout_closes_requests_in_flight, data::make(labels()), label) {
    auto s = reactors(label, 1);
    s->start();
    client c(s->local_endpoints().at(0));
    c.send("slow 60000\n");
    BOOST_REQUIRE(eventually([&] { return s->stats(0).in_flight.load() == 1; }));
    auto reports = s->drain(0ms);
    BOOST_TEST(reports.at(0).force_closed == 1u);
    BOOST_TEST(closed(c.line()));
}

// A hard stop from another thread while a drain waits for a request that
// does not end: both return, the drain's reports say it was force-closed.
BOOST_DATA_TEST_CASE_F(fixture, a_hard_stop_ends_a_drain_under_way, data::make(labels()), label) {
    auto s = reactors(label, 2);
    s->start();
    client c(s->local_endpoints().at(0));
    c.send("slow 60000\n");
    BOOST_REQUIRE(eventually([&] { return s->stats(0).in_flight.load() + s->stats(1).in_flight.load() == 1; }));
    std::vector<m0::reactor_report> reports;
    std::thread drainer([&] { reports = s->drain(60s); });
    s->shutdown();
    drainer.join();
    std::uint64_t force = 0;
    for (auto& r : reports) force += r.force_closed;
    BOOST_TEST(force == 1u);
    BOOST_TEST(closed(c.line()));
}

// Placement. Each reactor's live connections once a burst has been accepted.
namespace {

std::vector<std::uint64_t> live_per_reactor(const m0::reactor_set& s) {
    std::vector<std::uint64_t> out;
    for (unsigned r = 0; r < s.reactor_count(); ++r) out.push_back(s.stats(r).live_connections.load());
    return out;
}

std::uint64_t total(const std::vector<std::uint64_t>& v) {
    std::uint64_t n = 0;
    for (auto x : v) n += x;
    return n;
}

std::uint64_t spread(const std::vector<std::uint64_t>& v) {
    return *std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end());
}

// Opens `n` connections at once (each completes in the kernel's backlog) and
// waits until the reactors hold all of them.
std::vector<std::unique_ptr<client>> burst(const m0::reactor_set& s, unsigned n) {
    std::vector<std::unique_ptr<client>> out;
    for (unsigned i = 0; i < n; ++i) out.push_back(std::make_unique<client>(s.local_endpoints().at(0)));
    BOOST_REQUIRE(eventually([&] { return total(live_per_reactor(s)) == n; }));
    return out;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(balanced_places_a_burst_of_257_on_4_reactors_as_64_64_64_65, fixture) {
    auto s = reactors("balanced", 4);
    s->start();
    auto clients = burst(*s, 257);
    auto live = live_per_reactor(*s);
    std::sort(live.begin(), live.end());
    BOOST_TEST(live == (std::vector<std::uint64_t>{64, 64, 64, 65}), boost::test_tools::per_element());
    s->drain(5s);
}

// Connections close at random and new ones arrive: each new one goes where
// one closed (the least loaded reactor), so the spread never exceeds one.
BOOST_FIXTURE_TEST_CASE(balanced_keeps_the_spread_at_most_one_while_connections_close_at_random, fixture) {
    auto s = reactors("balanced", 4);
    s->start();
    auto clients = burst(*s, 64);
    std::mt19937 random(12345);
    for (int round = 0; round < 200; ++round) {
        std::uniform_int_distribution<std::size_t> pick(0, clients.size() - 1);
        const std::size_t victim = pick(random);
        clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(victim));
        BOOST_REQUIRE(eventually([&] { return total(live_per_reactor(*s)) == 63; }));
        clients.push_back(std::make_unique<client>(s->local_endpoints().at(0)));
        BOOST_REQUIRE(eventually([&] { return total(live_per_reactor(*s)) == 64; }));
        const auto live = live_per_reactor(*s);
        BOOST_TEST_CONTEXT("round " << round) BOOST_TEST(spread(live) <= 1u);
    }
    // Every connection still answers from where it was placed.
    for (auto& c : clients) BOOST_TEST(c->ask("fast").rfind("ok ", 0) == 0);
    s->drain(5s);
}

// The shared listener re-arms every few accepts, so a burst does not pile
// onto the reactor the kernel wakes first.
BOOST_FIXTURE_TEST_CASE(reactors_with_a_shared_listener_split_a_burst_of_257_no_worse_than_60_40, fixture) {
    auto s = reactors("reactors-shared", 2);
    s->start();
    auto clients = burst(*s, 257);
    const auto live = live_per_reactor(*s);
    BOOST_TEST_MESSAGE("split " << live[0] << "/" << live[1]);
    BOOST_TEST(*std::max_element(live.begin(), live.end()) <= 154u);  // 60 % of 257
    s->drain(5s);
}
