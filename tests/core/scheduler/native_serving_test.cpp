// The real scheduler and HTTP engine serving native handlers on several
// reactor threads while several client threads hammer them over loopback:
// fixed routes and static files (frontend-http's router), and jobs handed to
// an executor and back (inline, the pool, the pool with reactor_spin).
// Keep-alive and pipelined requests, then a drain or a hard stop while the
// load runs. Labelled `tsan`: the point is to run it under ThreadSanitizer,
// where any data race between reactors, pool threads, the drain and the
// stopper fails it; the checks here make sure the load really ran.
#define BOOST_TEST_MODULE native_serving
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/http.hpp>

#include "core/http/test_client.hpp"
#include "frontend_config.hpp"
#include "pool_executor.hpp"
#include "router.hpp"
#include "scheduler_plugins.hpp"
#include "support/temp_dir.hpp"

using namespace std::chrono_literals;
using m0::test::http_response;
using m0::test::test_client;

namespace {

constexpr unsigned reactors = 2;
constexpr unsigned client_threads = 4;
constexpr unsigned rounds = 25;  // pipelined batches per client thread

// The body a job computes for /job?n: n bytes, a pattern the client checks.
std::string job_body(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + n) % 26);
    return s;
}

std::size_t query_number(std::string_view query) {
    std::size_t n = 0;
    for (char c : query)
        if (c >= '0' && c <= '9') n = n * 10 + static_cast<std::size_t>(c - '0');
    return n;
}

// Computes the body on an executor thread; answers on the reactor. /stream-job
// also posts its first half as a streamed chunk from the executor thread.
class body_job final : public m0::job {
public:
    body_job(m0::http::exchange_ptr ex, std::size_t n, bool stream) : ex_(std::move(ex)), n_(n), stream_(stream) {}

    void run(m0::completion_port& port) noexcept override {
        body_ = job_body(n_);
        if (!stream_) return;
        port.post_fn([ex = ex_, length = n_, half = body_.substr(0, n_ / 2)]() mutable {
            ex->begin(200, {{"Content-Type", "text/plain"}}, length);
            ex->write(std::move(half));
        });
    }

    void complete(bool cancelled) noexcept override {
        if (cancelled) return ex_->abort();
        if (!stream_) return ex_->respond(200, {{"Content-Type", "text/plain"}}, std::move(body_));
        ex_->write(body_.substr(n_ / 2));
        ex_->end();
    }

private:
    m0::http::exchange_ptr ex_;
    std::size_t n_;
    bool stream_;
    std::string body_;
};

// /job and /stream-job go through the reactor's executor lane; everything else
// to frontend-http's router (routes, static files).
class handoff_handler final : public m0::http::handler {
public:
    handoff_handler(m0::http::handler& native, m0::executor_lane& lane) : native_(native), lane_(lane) {}

    void on_request(m0::http::exchange_ptr ex) override {
        const auto& req = ex->req();
        const bool stream = req.path == "/stream-job";
        if (!stream && req.path != "/job") return native_.on_request(std::move(ex));
        const std::size_t n = query_number(req.query);
        lane_.submit(std::make_unique<body_job>(std::move(ex), n, stream));
    }

private:
    m0::http::handler& native_;
    m0::executor_lane& lane_;
};

class handoff_frontend final : public m0::frontend {
public:
    explicit handoff_frontend(m0::frontend_http::frontend_config config) : router_(std::move(config)) {}

    void start_reactor(m0::reactor_context& ctx) override {
        m0::http::handler* h;
        {
            std::lock_guard lock(mutex_);
            h = &handlers_.emplace_back(router_, *ctx.lane);
        }
        m0::http::serve(ctx, *h);
    }

private:
    m0::frontend_http::router router_;
    std::mutex mutex_;
    std::deque<handoff_handler> handlers_;  // one per reactor; stable addresses
};

// Polls `cond` until it holds or `limit` passes.
template <class Cond>
bool eventually(Cond cond, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

enum class executor_kind { inline_, pool, pool_reactor_spin };

std::ostream& operator<<(std::ostream& os, executor_kind k) {
    return os << (k == executor_kind::inline_ ? "inline" : k == executor_kind::pool ? "pool" : "pool+reactor_spin");
}

const executor_kind executor_kinds[] = {executor_kind::inline_, executor_kind::pool, executor_kind::pool_reactor_spin};

std::unique_ptr<m0::executor> make_executor(executor_kind kind) {
    if (kind == executor_kind::inline_) return m0::make_inline_executor();
    m0::pool::pool_options o;
    o.threads = 2;
    o.max_threads = 3;
    if (kind == executor_kind::pool_reactor_spin) o.reactor_spin = 50us;
    return std::make_unique<m0::pool::pool_executor>(o);
}

const std::string file_content = job_body(300'000);  // several socket buffers: sendfile meets EAGAIN

// A served deployment: static root, routes, executor, scheduler.
struct deployment {
    explicit deployment(executor_kind kind, const std::string& scheduler = "reactors")
        : executor(make_executor(kind)) {
        root.write("file.txt", file_content);
        auto doc = m0::config_document::from_string(
            "frontend:\n"
            "  type: http\n"
            "  routes:\n"
            "    - {path: /hello, body: 'Hello, World!'}\n"
            "    - {path: /slow, delay: 60s, body: late}\n"
            "  static: {prefix: /static, root: '" + root.path().string() + "'}\n",
            "test.yaml");
        frontend = std::make_unique<handoff_frontend>(m0::frontend_http::parse_frontend_config(doc.root().child("frontend")));
        auto o = m0::test::loopback_options(reactors);
        o.pin_cores = false;
        executor->start();
        sched = m0::test::make_reactors(m0::test::scheduler_yaml(scheduler), *frontend, {executor.get()}, o);
        sched->start();
        port = sched->local_endpoints().at(0).port();
    }
    ~deployment() {
        sched.reset();
        executor->stop(2s);
    }

    m0::testing::temp_dir root;
    std::unique_ptr<m0::executor> executor;
    std::unique_ptr<handoff_frontend> frontend;
    std::unique_ptr<m0::reactor_set> sched;
    std::uint16_t port = 0;
};

std::string get(const std::string& target, const std::string& extra = "") {
    return "GET " + target + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

// One pipelined batch of every kind of request and what each must answer.
struct expected {
    int status;
    std::string body;
};

void batch(unsigned seed, std::string& bytes, std::vector<expected>& answers) {
    const std::size_t n = 1 + (seed * 2654435761u) % 40000;
    bytes += get("/hello");
    answers.push_back({200, "Hello, World!"});
    bytes += get("/job?n=" + std::to_string(n));
    answers.push_back({200, job_body(n)});
    bytes += get("/static/file.txt");
    answers.push_back({200, file_content});
    bytes += get("/stream-job?n=" + std::to_string(n + 1));
    answers.push_back({200, job_body(n + 1)});
    const std::size_t from = seed % 1000;
    bytes += get("/static/file.txt", "Range: bytes=" + std::to_string(from) + "-" + std::to_string(from + 99) + "\r\n");
    answers.push_back({206, file_content.substr(from, 100)});
    bytes += m0::test::post("/job?n=17", std::string(seed % 3000, 'p'));
    answers.push_back({200, job_body(17)});
    bytes += get("/missing");
    answers.push_back({404, ""});
}

// Client threads, each with its own keep-alive connections, sending
// pipelined batches until `rounds` are done or `stop` is set. A response is
// either exactly what was asked for, or the connection ends (only allowed
// once `stopping` is set: a drain or hard stop closes connections).
struct load {
    std::atomic<bool> stop{false}, stopping{false};
    std::atomic<unsigned> answered{0}, wrong{0}, cut_early{0};
    std::vector<std::thread> threads;

    load(std::uint16_t port, unsigned rounds_each) {
        for (unsigned t = 0; t < client_threads; ++t)
            threads.emplace_back([this, port, t, rounds_each] { run(port, t, rounds_each); });
    }
    ~load() {
        stop = true;
        join();
    }
    void join() {
        for (auto& th : threads)
            if (th.joinable()) th.join();
    }

    void run(std::uint16_t port, unsigned t, unsigned rounds_each) {
        std::unique_ptr<test_client> c;
        for (unsigned r = 0; r < rounds_each && !stop.load(); ++r) {
            try {
                // A new connection every few batches; keep-alive in between.
                if (!c || r % 5 == 0) c = std::make_unique<test_client>(port);
                std::string bytes;
                std::vector<expected> answers;
                batch(t * 1000 + r, bytes, answers);
                c->send(bytes);
                for (const auto& want : answers) {
                    auto got = c->read_response();
                    if (!got) throw std::runtime_error("no complete response");
                    if (got->status != want.status || (want.status != 404 && got->body != want.body))
                        wrong.fetch_add(1);
                    answered.fetch_add(1);
                }
            } catch (const std::runtime_error&) {
                // Refused, reset or cut: only a stop may do that.
                if (!stopping.load()) cut_early.fetch_add(1);
                c.reset();
                if (stopping.load()) return;
            }
        }
    }
};

}  // namespace

BOOST_DATA_TEST_CASE(every_request_is_answered_exactly, boost::unit_test::data::make(executor_kinds), kind) {
    deployment d(kind);
    {
        load l(d.port, rounds);
        l.join();
        BOOST_TEST(l.wrong.load() == 0u);
        BOOST_TEST(l.cut_early.load() == 0u);
        BOOST_TEST(l.answered.load() == client_threads * rounds * 7);
    }
    const auto reports = d.sched->drain(10s);
    std::uint64_t requests = 0;
    for (const auto& r : reports) {
        BOOST_TEST(!r.crashed);
        BOOST_TEST(!r.timed_out);
        requests += r.requests;
    }
    BOOST_TEST(requests == client_threads * rounds * 7);
}

// The other placements under the same load: a shared listener, and the
// balanced scheduler's accept thread handing connections to the reactors.
const std::vector<std::string> other_schedulers = {"reactors-shared", "balanced"};

BOOST_DATA_TEST_CASE(every_scheduler_serves_the_same,
                     boost::unit_test::data::make(executor_kinds) * boost::unit_test::data::make(other_schedulers),
                     kind, scheduler) {
    deployment d(kind, scheduler);
    load l(d.port, rounds / 5);
    l.join();
    BOOST_TEST(l.wrong.load() == 0u);
    BOOST_TEST(l.cut_early.load() == 0u);
    BOOST_TEST(l.answered.load() == client_threads * (rounds / 5) * 7);
}

// Stops `d` with `stop` while client threads keep sending and a /slow
// request (longer than any test) is in flight: every answer given is
// exact, no connection ends before the stop, and the /slow request is cut.
template <class Stop>
std::vector<m0::reactor_report> stop_under_load(deployment& d, Stop stop) {
    test_client held(d.port);
    held.send(get("/slow"));
    load l(d.port, 1'000'000);
    BOOST_REQUIRE(eventually([&] { return l.answered.load() >= 50; }, 60s));
    l.stopping = true;
    auto reports = stop();
    l.stop = true;
    l.join();
    BOOST_TEST(l.wrong.load() == 0u);
    BOOST_TEST(l.cut_early.load() == 0u);
    BOOST_TEST(!held.read_response());
    BOOST_REQUIRE(reports.size() == reactors);
    for (const auto& r : reports) BOOST_TEST(!r.crashed);
    return reports;
}

// A drain with a request that cannot finish before the deadline: it is
// force-closed, and the reactors leave.
BOOST_DATA_TEST_CASE(drain_and_force_close_under_load, boost::unit_test::data::make(executor_kinds), kind) {
    deployment d(kind);
    const auto reports = stop_under_load(d, [&] { return d.sched->drain(300ms); });
    std::uint64_t force_closed = 0;
    for (const auto& r : reports) {
        BOOST_TEST(!r.detached);
        force_closed += r.force_closed;
    }
    BOOST_TEST(force_closed >= 1u);  // at least the /slow request
}

// A hard stop from another thread while a drain waits.
BOOST_DATA_TEST_CASE(hard_stop_during_a_drain_under_load, boost::unit_test::data::make(executor_kinds), kind) {
    deployment d(kind);
    stop_under_load(d, [&] {
        std::vector<m0::reactor_report> reports;
        std::thread drainer([&] { reports = d.sched->drain(60s); });
        // The /slow request holds the drain until the hard stop, which may
        // also come first: either order ends both at once.
        d.sched->shutdown();
        drainer.join();
        return reports;
    });
}
