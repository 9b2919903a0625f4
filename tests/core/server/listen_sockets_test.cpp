#define BOOST_TEST_MODULE listen_sockets
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <m0/listen_socket.hpp>
#include "server/listen_sockets.hpp"
#include "server/socket_activation.hpp"

using boost::asio::ip::make_address;
using boost::asio::ip::tcp;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

bool is_listening(int fd) {
    int value = 0;
    socklen_t len = sizeof value;
    return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &len) == 0 && value;
}

tcp::endpoint loopback(unsigned short port = 0) { return {make_address("127.0.0.1"), port}; }

}  // namespace

BOOST_AUTO_TEST_CASE(shared_opens_one_socket_per_address_and_resolves_port_0) {
    std::vector<tcp::endpoint> addresses{loopback(), loopback()};
    m0::listen_sockets sockets(addresses, m0::socket_layout{m0::listener_strategy::shared, 2}, 2, 16, {});
    BOOST_TEST(addresses[0].port() != 0);
    BOOST_TEST(addresses[1].port() != 0);
    m0::scheduler_options options;
    sockets.hand_to_scheduler(0, options);
    BOOST_REQUIRE_EQUAL(options.shared_fds.size(), 2u);
    BOOST_TEST(options.reactor_fds.empty());
    BOOST_TEST(!options.check_addresses);
    for (int fd : options.shared_fds) {
        BOOST_TEST(is_listening(fd));
        ::close(fd);
    }
    // Handed over: nothing left to pass on.
    BOOST_TEST(sockets.for_exec().empty());
}

BOOST_AUTO_TEST_CASE(reuseport_opens_a_socket_per_reactor_and_address_for_each_slot) {
    std::vector<tcp::endpoint> addresses{loopback()};
    m0::listen_sockets sockets(addresses, m0::socket_layout{m0::listener_strategy::reuseport, 2}, 2, 16, {});
    const auto port = addresses[0].port();
    BOOST_TEST(port != 0);
    sockets.open_slot(1);
    const auto all = sockets.for_exec();
    BOOST_REQUIRE_EQUAL(all.size(), 4u);  // 2 slots × 2 reactors × 1 address
    BOOST_TEST(all[0].name == "m0-slot-0-0");
    BOOST_TEST(all[3].name == "m0-slot-1-1");
    for (const auto& s : all) BOOST_TEST(s.address.port() == port);
    // A slot's process gets its own sockets; the others are closed in it.
    m0::scheduler_options options;
    sockets.hand_to_scheduler(1, options);
    BOOST_REQUIRE_EQUAL(options.reactor_fds.size(), 2u);
    BOOST_TEST(options.reactor_fds[0][0] == all[2].fd);
    BOOST_TEST(options.reactor_fds[1][0] == all[3].fd);
    BOOST_TEST(!is_open(all[0].fd));
    BOOST_TEST(!is_open(all[1].fd));
    for (auto& r : options.reactor_fds) ::close(r[0]);
}

BOOST_AUTO_TEST_CASE(close_slot_closes_only_that_slot) {
    std::vector<tcp::endpoint> addresses{loopback()};
    m0::listen_sockets sockets(addresses, m0::socket_layout{m0::listener_strategy::reuseport, 1}, 2, 16, {});
    sockets.open_slot(1);
    const auto all = sockets.for_exec();
    sockets.close_slot(1);
    BOOST_TEST(is_open(all[0].fd));
    BOOST_TEST(!is_open(all[1].fd));
    BOOST_TEST(sockets.for_exec().size() == 1u);
}

BOOST_AUTO_TEST_CASE(inherited_sockets_are_matched_by_address) {
    auto bound = loopback();
    const int fd = m0::open_listen_socket(bound, false, 16);
    // A configured port 0 takes the inherited socket's port on the same host.
    std::vector<tcp::endpoint> addresses{loopback()};
    m0::listen_sockets sockets(addresses, m0::socket_layout{m0::listener_strategy::reuseport, 2}, 2, 16, {{fd, "web", bound, {}}});
    BOOST_TEST(addresses[0] == bound);
    // Passed by a service manager: shared by every reactor, whatever was configured.
    BOOST_TEST((sockets.strategy() == m0::listener_strategy::shared));
    m0::scheduler_options options;
    sockets.hand_to_scheduler(0, options);
    BOOST_REQUIRE_EQUAL(options.shared_fds.size(), 1u);
    BOOST_TEST(options.shared_fds[0] == fd);
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_passed_socket_for_no_listed_address_is_refused_and_closed) {
    auto bound = loopback();
    const int fd = m0::open_listen_socket(bound, false, 16);
    auto other = bound;
    other.port(static_cast<unsigned short>(bound.port() == 65535 ? 1 : bound.port() + 1));
    std::vector<tcp::endpoint> addresses{other};
    try {
        m0::listen_sockets sockets(addresses, m0::socket_layout{m0::listener_strategy::shared, 1}, 2, 16, {{fd, "web", bound, {}}});
        BOOST_FAIL("accepted a socket for an address not listed");
    } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()).find("matches no address of server.listen") != std::string::npos);
    }
    BOOST_TEST(!is_open(fd));
}

BOOST_AUTO_TEST_CASE(a_reload_keeps_its_slot_sockets_and_drops_what_is_no_longer_listed) {
    std::vector<tcp::endpoint> first{loopback()};
    m0::listen_sockets before(first, m0::socket_layout{m0::listener_strategy::reuseport, 1}, 2, 16, {});
    auto passed = before.for_exec();
    passed[0].fd = ::dup(passed[0].fd);
    // What the exec'd m0 also receives: a slot socket on an address the new
    // config no longer lists.
    auto dropped = loopback();
    const int dropped_fd = m0::open_listen_socket(dropped, true, 16);
    passed.push_back({dropped_fd, "m0-slot-1-0", dropped, {}});
    std::vector<tcp::endpoint> addresses{first[0]};
    m0::listen_sockets after(addresses, m0::socket_layout{m0::listener_strategy::reuseport, 1}, 2, 16, passed);
    BOOST_TEST(!is_open(dropped_fd));
    const auto now = after.for_exec();
    BOOST_REQUIRE_EQUAL(now.size(), 1u);
    BOOST_TEST(now[0].fd == passed[0].fd);
    BOOST_TEST(now[0].name == "m0-slot-0-0");
}

BOOST_AUTO_TEST_CASE(a_reload_to_fewer_processes_closes_the_sockets_of_the_slots_gone) {
    // Kept open with no process to accept on them, they would take their
    // share of connections and never answer.
    std::vector<tcp::endpoint> first{loopback()};
    m0::listen_sockets before(first, m0::socket_layout{m0::listener_strategy::reuseport, 1}, 2, 16, {});
    before.open_slot(1);
    auto passed = before.for_exec();
    for (auto& p : passed) p.fd = ::dup(p.fd);
    std::vector<tcp::endpoint> addresses{first[0]};
    m0::listen_sockets after(addresses, m0::socket_layout{m0::listener_strategy::reuseport, 1}, 1, 16, passed);
    BOOST_TEST(is_open(passed[0].fd));
    BOOST_TEST(!is_open(passed[1].fd));
    BOOST_TEST(after.for_exec().size() == 1u);
}

BOOST_AUTO_TEST_CASE(take_inherited_sockets_reads_the_listen_fds_protocol) {
    auto bound = loopback();
    const int fd = m0::open_listen_socket(bound, false, 16);
    m0::pass_sockets_to_exec({{fd, "web", bound, {}}});
    BOOST_TEST(std::string(std::getenv("LISTEN_FDS")) == "1");
    BOOST_TEST(std::string(std::getenv("LISTEN_FDNAMES")) == "web");
    const auto taken = m0::take_inherited_sockets();
    BOOST_REQUIRE_EQUAL(taken.size(), 1u);
    BOOST_TEST(taken[0].fd == 3);
    BOOST_TEST(taken[0].name == "web");
    BOOST_TEST(taken[0].address == bound);
    BOOST_TEST(::fcntl(3, F_GETFD) == FD_CLOEXEC);
    // Taken: a child does not see them as its own.
    BOOST_TEST(std::getenv("LISTEN_FDS") == nullptr);
    BOOST_TEST(std::getenv("LISTEN_PID") == nullptr);
    ::close(3);
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(sockets_for_another_process_are_left_alone) {
    ::setenv("LISTEN_FDS", "1", 1);
    ::setenv("LISTEN_PID", std::to_string(::getpid() + 1).c_str(), 1);
    BOOST_TEST(m0::take_inherited_sockets().empty());
    BOOST_TEST(std::getenv("LISTEN_FDS") == nullptr);
}
