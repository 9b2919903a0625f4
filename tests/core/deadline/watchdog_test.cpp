// The deadline watchdog without an engine: calls on several threads start,
// produce, wait and finish while the watchdog expires some of them. Every
// expired call is answered once on its reactor, never twice; a thread is
// written off only while it is still inside the call that expired (never
// after it returned and took other work); a call that finishes in time is
// never answered for; a give-up comes when written-off threads reach the
// bound. Label tsan: the registry, the clock's atomics and the expiry lock.
#define BOOST_TEST_MODULE deadline_watchdog
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <m0/log.hpp>

#include "deadline/watchdog.hpp"

using namespace std::chrono_literals;
using m0::deadline::mount_deadlines;
using m0::deadline::watchdog;
using m0::deadline::watchdog_options;

namespace {

// A reactor: a thread running what is posted to it, in order.
class fake_reactor final : public m0::reactor_handle {
public:
    fake_reactor() : thread_([this] { run(); }) {}
    ~fake_reactor() override { stop(); }
    bool post(std::function<void()> fn) override {
        std::lock_guard lock(mutex_);
        if (stopped_) return false;
        queue_.push_back(std::move(fn));
        cv_.notify_one();
        return true;
    }
    unsigned reactor_index() const noexcept override { return 0; }
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
            cv_.notify_one();
        }
        if (thread_.joinable()) thread_.join();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            cv_.wait(lock, [&] { return stopped_ || !queue_.empty(); });
            if (queue_.empty()) return;
            auto fn = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            fn();
            lock.lock();
        }
    }
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stopped_ = false;
    std::thread thread_;
};

// An exchange that counts the answers the watchdog makes for the app.
class counting_exchange final : public m0::http::exchange {
public:
    const m0::http::request& req() const override { return req_; }
    boost::asio::io_context& io() override { return io_; }
    void respond(unsigned status, std::vector<m0::http::response_header>, std::string) override {
        if (status == 504) ++answers;
    }
    void begin(unsigned, std::vector<m0::http::response_header>, std::optional<std::uint64_t>) override {}
    void write(std::string) override {}
    void write_file(int, std::uint64_t, std::uint64_t) override {}
    void end() override {}
    void abort() override { ++answers; }
    std::size_t pending_bytes() const override { return 0; }
    void when_drained(std::size_t, std::function<void()>) override {}
    bool client_gone() const override { return false; }
    void respond_borrowed(unsigned, const std::vector<m0::http::response_header>&, std::string_view) override {}
    void read_body(std::size_t, m0::http::body_handler) override {}
    bool body_pending() const override { return false; }
    void on_client_gone(std::function<void()>) override {}
    std::shared_ptr<m0::http::byte_stream> upgrade(std::vector<m0::http::response_header>) override { return nullptr; }
    void on_drain(std::function<void()>) override {}
    void end_with_trailers(std::vector<m0::http::response_header>) override {}
    void write_shared(std::shared_ptr<const std::string>) override {}
    void on_peer_eof(std::function<void()>) override {}
    void write_shared_batch(std::span<const std::shared_ptr<const std::string>>) override {}
    void set_outcome(m0::http::request_outcome o) override {
        if (o == m0::http::request_outcome::timeout) ++timeouts;
    }

    std::atomic<int> answers{0};  // written on the fake reactor only
    std::atomic<int> timeouts{0};

private:
    m0::http::request req_ = [] {
        m0::http::request r;
        r.method = "GET";
        r.target = r.path = "/t";
        return r;
    }();
    boost::asio::io_context io_;
};

// The threads each call runs on: `inside` says whether a thread is inside a
// call now; a write-off of a thread that is not is the bug this test hunts.
struct call_threads {
    static constexpr int count = 4;
    std::atomic<long> tid[count]{};
    std::atomic<bool> inside[count]{};
    std::atomic<int> bad_write_offs{0};
    std::atomic<int> write_offs{0};
};

class recording_executor final : public m0::executor {
public:
    explicit recording_executor(call_threads& t) : threads_(t) {}
    std::string_view name() const override { return "recording"; }
    void add_thread_hooks(m0::thread_hooks) override {}
    void start() override {}
    std::unique_ptr<m0::executor_lane> make_lane(std::shared_ptr<m0::reactor_waker>) override { return nullptr; }
    unsigned stop(std::chrono::milliseconds) override { return 0; }
    bool write_off(long thread) noexcept override {
        for (int i = 0; i < call_threads::count; ++i)
            if (threads_.tid[i].load() == thread) {
                if (!threads_.inside[i].load()) ++threads_.bad_write_offs;
                ++threads_.write_offs;
                return true;
            }
        return false;
    }

private:
    call_threads& threads_;
};

// Hundreds of deadline lines would drown a failure's message.
struct quiet_log {
    quiet_log() { m0::log::set_level(m0::log::level::error); }
};
BOOST_TEST_GLOBAL_FIXTURE(quiet_log);

}  // namespace

BOOST_AUTO_TEST_CASE(calls_racing_their_deadlines_are_answered_once_and_written_off_only_inside) {
    call_threads threads;
    recording_executor ex(threads);
    std::atomic<int> gave_up{0};
    watchdog_options o;
    o.max_written_off = 1'000'000;  // never: this test counts, it does not give up
    o.process_name = "(test)";
    o.give_up = [&](const std::string&) { ++gave_up; };
    watchdog dog(o, {&ex});
    dog.start(2ms);
    auto reactor = std::make_shared<fake_reactor>();
    mount_deadlines mount(&dog, 0, "", 2ms, reactor);

    constexpr int rounds = 300;
    std::vector<std::shared_ptr<counting_exchange>> exchanges(call_threads::count * rounds);
    std::vector<std::shared_ptr<m0::request_deadline>> deadlines(exchanges.size());
    for (std::size_t i = 0; i < exchanges.size(); ++i) {
        exchanges[i] = std::make_shared<counting_exchange>();
        deadlines[i] = mount.watch(exchanges[i]);  // the reactor's part, made up front
    }
    std::vector<std::thread> workers;
    for (int t = 0; t < call_threads::count; ++t)
        workers.emplace_back([&, t] {
            threads.tid[t].store(::gettid());
            for (int r = 0; r < rounds; ++r) {
                auto& d = *deadlines[t * rounds + r];
                threads.inside[t].store(true);
                d.started(nullptr);
                // Some finish at once, some produce and wait, some overrun.
                const auto work = std::chrono::microseconds((r * 131 + t * 17) % 4000);
                const auto until = std::chrono::steady_clock::now() + work;
                while (std::chrono::steady_clock::now() < until) {
                    if (r % 3 == 0) d.produced(false);
                    if (r % 5 == 0) {
                        d.waiting_on_server(true);
                        std::this_thread::sleep_for(100us);
                        d.waiting_on_server(false);
                    }
                }
                d.finished();
                threads.inside[t].store(false);
            }
        });
    for (auto& w : workers) w.join();
    // The watchdog answers what expired on the reactor; let it finish.
    std::this_thread::yield();
    dog.stop();
    reactor->stop();

    int expired = 0;
    for (std::size_t i = 0; i < deadlines.size(); ++i) {
        const int answers = exchanges[i]->answers.load();
        if (deadlines[i]->expired()) {
            ++expired;
            BOOST_TEST(answers <= 1, "call " << i << " answered " << answers << " times");
            BOOST_TEST(exchanges[i]->timeouts.load() == answers);
        } else {
            BOOST_TEST(answers == 0, "call " << i << " finished in time yet was answered for");
        }
    }
    BOOST_TEST(threads.bad_write_offs.load() == 0);
    BOOST_TEST(threads.write_offs.load() <= expired);
    BOOST_TEST(expired > 0);  // 4 ms of work against 2 ms: some must overrun
    BOOST_TEST(gave_up.load() == 0);
}

BOOST_AUTO_TEST_CASE(written_off_threads_reaching_the_bound_give_the_process_up_once) {
    call_threads threads;
    recording_executor ex(threads);
    std::atomic<int> gave_up{0};
    std::string why;
    std::mutex why_mutex;
    watchdog_options o;
    o.max_written_off = 2;
    o.give_up = [&](const std::string& reason) {
        std::lock_guard lock(why_mutex);
        why = reason;
        ++gave_up;
    };
    watchdog dog(o, {&ex});
    dog.start(20ms);
    auto reactor = std::make_shared<fake_reactor>();
    mount_deadlines mount(&dog, 0, "/api", 20ms, reactor);
    threads.tid[0].store(::gettid());
    threads.inside[0].store(true);
    std::vector<std::shared_ptr<counting_exchange>> exchanges;
    for (int i = 0; i < 3; ++i) {
        exchanges.push_back(std::make_shared<counting_exchange>());
        auto d = mount.watch(exchanges.back());
        d->started(nullptr);
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (!d->expired() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
        BOOST_REQUIRE(d->expired());
        d->finished();
    }
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (gave_up.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    dog.stop();
    reactor->stop();
    BOOST_TEST(gave_up.load() == 1);
    BOOST_TEST(why.find("2 threads are written off") != std::string::npos, why);
    BOOST_TEST(dog.counts(0).hit.load() == 3u);
    BOOST_TEST(dog.counts(0).escalated.load() == 1u);
}

BOOST_AUTO_TEST_CASE(a_lifted_deadline_never_expires) {
    call_threads threads;
    recording_executor ex(threads);
    watchdog_options o;
    watchdog dog(o, {&ex});
    dog.start(10ms);
    auto reactor = std::make_shared<fake_reactor>();
    mount_deadlines mount(&dog, 0, "", 10ms, reactor);
    auto ex1 = std::make_shared<counting_exchange>();
    auto lifted = mount.watch(ex1);
    lifted->started(nullptr);
    lifted->set_timeout(std::nullopt);
    auto ex2 = std::make_shared<counting_exchange>();
    auto paused = mount.watch(ex2);
    paused->started(nullptr);
    paused->waiting_on_server(true);
    std::this_thread::sleep_for(200ms);  // twenty of its timeouts, with no clock running for either
    BOOST_TEST(!lifted->expired());
    BOOST_TEST(!paused->expired());
    lifted->finished();
    paused->waiting_on_server(false);
    paused->finished();
    dog.stop();
    reactor->stop();
    BOOST_TEST(ex1->answers.load() + ex2->answers.load() == 0);
}
