// The Redis bus against a real redis-server: publishes from many threads at
// once cross to the bus thread through its queue and all come back, each
// thread's in order, while other threads subscribe and unsubscribe channels.
// Label tsan: run in the ThreadSanitizer build too.
#define BOOST_TEST_MODULE realtime_redis_bus
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redis_bus.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using m0::realtime::bus_message;

bool accepts(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    return ok;
}

// A redis-server of the test's own on a unix socket in a scratch directory.
class redis_server {
public:
    redis_server() : socket_((dir_.path() / "redis.sock").string()) {
        std::string dir = dir_.path().string(), log = (dir_.path() / "redis.log").string();
        std::vector<std::string> args{"/usr/bin/redis-server", "--port", "0", "--unixsocket", socket_,
                                      "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", log};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        BOOST_TEST_REQUIRE(::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
        // Ready when its socket accepts (bounded: a server that never comes
        // up fails the test, it does not hang it).
        auto deadline = std::chrono::steady_clock::now() + 60s;
        while (!accepts(socket_)) {
            BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "redis-server did not start");
            std::this_thread::sleep_for(10ms);
        }
    }
    ~redis_server() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    std::string url() const { return "unix://" + socket_; }

private:
    m0::testing::temp_dir dir_;
    std::string socket_;
    pid_t pid_ = -1;
};

m0::realtime::redis_bus_settings settings_for(const redis_server& server) {
    std::string error;
    auto address = m0::realtime::parse_redis_url(server.url(), error);
    BOOST_TEST_REQUIRE(address.has_value(), error);
    return {.address = *address, .connect_timeout = 10000ms};
}

}  // namespace

BOOST_AUTO_TEST_CASE(publishes_from_many_threads_all_come_back_in_order_per_thread) {
    redis_server server;
    constexpr int threads = 4, per_thread = 500;

    std::mutex mutex;
    std::condition_variable arrived;
    std::map<int, std::vector<int>> seen;  // publisher thread → sequence numbers, in arrival order
    int events = 0;

    m0::realtime::redis_bus bus(settings_for(server));
    bus.start([&](std::span<const bus_message> batch) {
        std::lock_guard lock(mutex);
        for (auto& m : batch) {
            if (m.channel != "t") continue;
            BOOST_TEST(m.event.has_value() == (m.data.back() == '0'));
            auto colon = m.data.find(':');
            seen[std::stoi(std::string(m.data.substr(0, colon)))].push_back(
                std::stoi(std::string(m.data.substr(colon + 1))));
        }
        events += static_cast<int>(batch.size());
        arrived.notify_all();
    });
    std::vector<std::string> t{"t"};
    bus.subscribe("t");
    bus.wait_listening(t);

    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i)
        workers.emplace_back([&bus, i] {
            for (int n = 0; n < per_thread; ++n) {
                std::string data = std::to_string(i) + ":" + std::to_string(n);
                bus.publish("t", data, data.back() == '0' ? std::optional<std::string_view>("tens") : std::nullopt,
                            m0::realtime::payload_kind::text);
            }
        });
    // Channels coming and going meanwhile, from two more threads.
    for (int i = 0; i < 2; ++i)
        workers.emplace_back([&bus, i] {
            std::string ch = "churn" + std::to_string(i);
            for (int n = 0; n < 200; ++n) {
                bus.subscribe(ch);
                bus.unsubscribe(ch);
            }
        });
    for (auto& w : workers) w.join();

    {
        std::unique_lock lock(mutex);
        BOOST_TEST_REQUIRE(arrived.wait_for(lock, 120s, [&] { return events >= threads * per_thread; }),
                           "only " << events << " of " << threads * per_thread << " messages came back");
    }
    // The last replies to PUBLISH may still be on their way.
    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (bus.stats().published < threads * per_thread && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    bus.stop();

    auto stats = bus.stats();
    BOOST_TEST(stats.published == std::uint64_t(threads * per_thread));
    BOOST_TEST(stats.delivered == std::uint64_t(threads * per_thread));
    BOOST_TEST(stats.lost == 0u);
    BOOST_TEST(stats.reconnects == 0u);
    for (int i = 0; i < threads; ++i) {
        std::vector<int> expected(per_thread);
        for (int n = 0; n < per_thread; ++n) expected[n] = n;
        BOOST_TEST(seen[i] == expected, "thread " << i);
    }
}

BOOST_AUTO_TEST_CASE(a_publish_before_start_is_lost_and_counted) {
    // A publish at import time, before the serving process started the bus:
    // nothing can carry it, and it says so in the counters.
    redis_server server;
    m0::realtime::redis_bus bus(settings_for(server));
    bus.publish("t", "early", std::nullopt, m0::realtime::payload_kind::text);
    BOOST_TEST(bus.stats().lost == 1u);
    bus.start([](std::span<const bus_message>) {});
    bus.stop();
    BOOST_TEST(bus.stats().lost == 1u);
}
