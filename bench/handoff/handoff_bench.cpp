// Hand-off ping-pong: what one reactor → pool thread → reactor round trip
// costs in CPU for each way of crossing threads, and how many jobs/s the
// pool moves. Prints a table; see docs/benchmarks/handoff.md.
//
//   m0_bench_handoff [--round-trips N] [--seconds S]
//
// CPU is process CPU (user + sys, getrusage) over the run divided by round
// trips, so a spinning side is charged for its spinning.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/lockfree/queue.hpp>

#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <m0/executor.hpp>
#include <m0/reactor_pass.hpp>
#include <m0/rings/vyukov_ring.hpp>

#include "pool_executor.hpp"

namespace {

using namespace std::chrono;
using m0::pool::ring_kind;

double process_cpu_us() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

struct result {
    std::string arm;
    std::uint64_t round_trips = 0;
    double wall_us = 0, cpu_us = 0;
};

// Runs body(n) (which performs n round trips) and measures it.
result measure(const std::string& arm, std::uint64_t n, const std::function<void(std::uint64_t)>& body) {
    const double cpu0 = process_cpu_us();
    const auto t0 = steady_clock::now();
    body(n);
    const auto t1 = steady_clock::now();
    const double cpu1 = process_cpu_us();
    return {arm, n, duration<double, std::micro>(t1 - t0).count(), cpu1 - cpu0};
}

// --- raw arms: two threads, one message each way per round trip -------------

// `window` messages in flight: 1 is the latency-bound ping-pong; 64 is a
// pipelined stream in which a spinning side rarely waits.
template <class Push, class Pop>
void spin_pingpong(std::uint64_t n, std::uint64_t window, Push push_there, Pop pop_there, Push push_back,
                   Pop pop_back) {
    std::thread peer([&] {
        std::uint64_t v = 0;
        for (std::uint64_t i = 0; i < n; ++i) {
            while (!pop_there(v)) {
            }
            while (!push_back(v + 1)) {
            }
        }
    });
    std::uint64_t v = 0;
    for (std::uint64_t i = 0; i < n; i += window) {
        const std::uint64_t batch = std::min(window, n - i);
        for (std::uint64_t k = 0; k < batch; ++k)
            while (!push_there(i + k)) {
            }
        for (std::uint64_t k = 0; k < batch; ++k)
            while (!pop_back(v)) {
            }
    }
    peer.join();
}

template <class Ring>
auto pusher(Ring& r) {
    return [&r](std::uint64_t v) {
        if constexpr (requires { r.bounded_push(v); }) return r.bounded_push(v);
        else return r.try_push(v);
    };
}

template <class Ring>
auto popper(Ring& r) {
    return [&r](std::uint64_t& v) {
        if constexpr (requires { r.try_pop(v); }) return r.try_pop(v);
        else return r.pop(v);
    };
}

std::function<void(std::uint64_t)> ring_spin(std::uint64_t window) {
    return [window](std::uint64_t n) {
        m0::rings::vyukov_ring<std::uint64_t> there(1024), back(1024);
        spin_pingpong(n, window, pusher(there), popper(there), pusher(back), popper(back));
    };
}

std::function<void(std::uint64_t)> lockfree_spin(std::uint64_t window) {
    return [window](std::uint64_t n) {
        boost::lockfree::queue<std::uint64_t> there(1024), back(1024);
        spin_pingpong(n, window, pusher(there), popper(there), pusher(back), popper(back));
    };
}

void eventfd_pingpong(std::uint64_t n) {
    const int there = eventfd(0, EFD_CLOEXEC), back = eventfd(0, EFD_CLOEXEC);
    std::thread peer([&] {
        std::uint64_t v = 0;
        for (std::uint64_t i = 0; i < n; ++i) {
            if (read(there, &v, sizeof v) != sizeof v) std::abort();
            if (write(back, &v, sizeof v) != sizeof v) std::abort();
        }
    });
    std::uint64_t v = 1;
    for (std::uint64_t i = 0; i < n; ++i) {
        if (write(there, &v, sizeof v) != sizeof v) std::abort();
        if (read(back, &v, sizeof v) != sizeof v) std::abort();
    }
    peer.join();
    close(there);
    close(back);
}

std::function<void(std::uint64_t)> socketpair_pingpong(std::uint64_t window) {
    return [window](std::uint64_t n) {
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
        std::thread peer([&] {
            void* p = nullptr;
            for (std::uint64_t i = 0; i < n; ++i) {
                if (recv(fds[1], &p, sizeof p, 0) != sizeof p) std::abort();
                if (send(fds[1], &p, sizeof p, 0) != sizeof p) std::abort();
            }
        });
        void* p = &n;
        for (std::uint64_t i = 0; i < n; i += window) {
            const std::uint64_t batch = std::min(window, n - i);
            for (std::uint64_t k = 0; k < batch; ++k)
                if (send(fds[0], &p, sizeof p, 0) != sizeof p) std::abort();
            for (std::uint64_t k = 0; k < batch; ++k)
                if (recv(fds[0], &p, sizeof p, 0) != sizeof p) std::abort();
        }
        peer.join();
        close(fds[0]);
        close(fds[1]);
    };
}

// --- the pool itself: a reactor loop as the core runs it ----------------------

// Posts to the reactor; the bench stops the pool before its reactor goes.
class io_waker final : public m0::reactor_waker {
public:
    explicit io_waker(boost::asio::io_context& io) : io_(io) {}
    void wake() noexcept override { boost::asio::post(io_, [] {}); }

private:
    boost::asio::io_context& io_;
};

class counting_job final : public m0::job {
public:
    explicit counting_job(std::uint64_t& done) : done_(done) {}
    void run(m0::completion_port&) noexcept override {}
    void complete(bool) noexcept override { ++done_; }

private:
    std::uint64_t& done_;
};

struct bench_reactor {
    explicit bench_reactor(m0::executor& ex) : lane(ex.make_lane(waker)) {}
    // Keeps `window` jobs in flight until `until` says stop; returns jobs done.
    template <class Until>
    std::uint64_t run(std::size_t window, Until until) {
        std::uint64_t done = 0, submitted = 0;
        for (;;) {
            const bool more = !until(done);
            while (more && lane->jobs_in_flight() < window) {
                lane->submit(std::make_unique<counting_job>(done));
                ++submitted;
            }
            if (!more && lane->jobs_in_flight() == 0) return done;
            m0::run_reactor_pass(io, *lane);
        }
    }
    boost::asio::io_context io{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
    std::shared_ptr<io_waker> waker = std::make_shared<io_waker>(io);
    std::unique_ptr<m0::executor_lane> lane;
};

m0::pool::pool_options pool_opts(ring_kind ring, unsigned threads, nanoseconds spin,
                                 nanoseconds reactor_spin = nanoseconds(0)) {
    m0::pool::pool_options o;
    o.threads = o.max_threads = threads;
    o.ring = ring;
    o.spin = spin;
    o.reactor_spin = reactor_spin;
    return o;
}

// One job at a time through the pool: the latency-bound round trip.
std::function<void(std::uint64_t)> pool_pingpong(ring_kind ring, nanoseconds spin,
                                                 nanoseconds reactor_spin = nanoseconds(0)) {
    return [=](std::uint64_t n) {
        m0::pool::pool_executor ex(pool_opts(ring, 1, spin, reactor_spin));
        bench_reactor r(ex);
        ex.start();
        r.run(1, [&](std::uint64_t done) { return done >= n; });
        ex.stop();
    };
}

// jobs/s with `lanes` reactors and as many pool threads, 64 jobs in flight each.
double pool_throughput(ring_kind ring, unsigned lanes, double seconds_) {
    m0::pool::pool_executor ex(pool_opts(ring, lanes, microseconds(10)));
    std::vector<std::unique_ptr<bench_reactor>> rs;
    for (unsigned i = 0; i < lanes; ++i) rs.push_back(std::make_unique<bench_reactor>(ex));
    ex.start();
    std::atomic<std::uint64_t> total{0};
    const auto end = steady_clock::now() + duration<double>(seconds_);
    const auto t0 = steady_clock::now();
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < lanes; ++i)
        ts.emplace_back([&, i] {
            std::uint64_t checks = 0;
            total += rs[i]->run(64, [&](std::uint64_t) { return (++checks & 255) == 0 && steady_clock::now() >= end; });
        });
    for (auto& t : ts) t.join();
    const double secs = duration<double>(steady_clock::now() - t0).count();
    ex.stop();
    return total.load() / secs;
}

void print_table(const char* title, const std::vector<result>& rs) {
    // The first row is the socketpair arm every other row is compared with.
    const double base = rs[0].cpu_us / rs[0].round_trips;
    std::printf("\n%s\n%-36s %12s %12s %12s %14s\n", title, "arm", "round trips", "wall us/rt", "CPU us/rt",
                "CPU vs sockpr");
    for (const auto& r : rs) {
        const double cpu = r.cpu_us / r.round_trips;
        std::printf("%-36s %12llu %12.3f %12.3f %13.1fx\n", r.arm.c_str(),
                    static_cast<unsigned long long>(r.round_trips), r.wall_us / r.round_trips, cpu, base / cpu);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t n = 200000;
    double seconds_ = 2.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--round-trips")) n = std::strtoull(argv[i + 1], nullptr, 10);
        else if (!std::strcmp(argv[i], "--seconds")) seconds_ = std::atof(argv[i + 1]);
    }

    std::vector<result> rs;
    // Kernel and parking arms run fewer round trips: they are slower.
    const std::uint64_t slow = n / 4;
    rs.push_back(measure("socketpair dgram (block)", slow, socketpair_pingpong(1)));
    rs.push_back(measure("eventfd (block)", slow, eventfd_pingpong));
    rs.push_back(measure("vyukov ring, pure spin", n, ring_spin(1)));
    rs.push_back(measure("boost::lockfree::queue, pure spin", n, lockfree_spin(1)));
    rs.push_back(measure("pool vyukov, spin 10us", n, pool_pingpong(ring_kind::vyukov, microseconds(10))));
    rs.push_back(measure("pool vyukov, spin + reactor_spin 10us", n,
                         pool_pingpong(ring_kind::vyukov, microseconds(10), microseconds(10))));
    rs.push_back(measure("pool vyukov, park (spin 0)", slow, pool_pingpong(ring_kind::vyukov, nanoseconds(0))));
    rs.push_back(measure("pool lockfree, spin 10us", n, pool_pingpong(ring_kind::lockfree, microseconds(10))));
    rs.push_back(measure("pool none (eventfd+mutex)", slow, pool_pingpong(ring_kind::none, nanoseconds(0))));
    print_table("ping-pong, 1 message in flight (1 reactor <-> 1 thread)", rs);

    std::vector<result> ps;
    ps.push_back(measure("socketpair dgram (block)", n, socketpair_pingpong(64)));
    ps.push_back(measure("vyukov ring, spin", 4 * n, ring_spin(64)));
    ps.push_back(measure("boost::lockfree::queue, spin", 4 * n, lockfree_spin(64)));
    print_table("pipelined, 64 messages in flight", ps);

    std::printf("\n%-36s %14s %14s\n", "pool throughput (64 in flight/lane)", "1->1 jobs/s", "4->4 jobs/s");
    for (ring_kind k : {ring_kind::vyukov, ring_kind::lockfree, ring_kind::none}) {
        const double one = pool_throughput(k, 1, seconds_);
        const double four = pool_throughput(k, 4, seconds_);
        std::printf("%-36s %14.0f %14.0f\n", m0::pool::to_string(k), one, four);
    }
    return 0;
}
