#pragma once
// The request deadlines of one serving process (m0/deadline.hpp): the
// application calls being timed, the watchdog thread that looks at them a
// few times a second from outside every reactor and executor thread (so a
// stuck application, even on a reactor, is seen), what it does at a deadline,
// and when it gives the process up.
//
// Threads: a call is added by the executor thread that starts the
// application and removed by it when the application returns in time; the
// watchdog takes over a call whose deadline passed, posts its answer to the
// call's reactor, and drops it once the reactor answered. The registry's
// mutex is taken twice per application call, never while anything else is held.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <m0/api.hpp>
#include <m0/deadline.hpp>
#include <m0/executor.hpp>
#include <m0/reactor.hpp>

namespace m0::deadline {

class call;

// What the deadlines of one executor did, for the metrics (counters only grow).
struct executor_counts {
    std::atomic<std::uint64_t> hit{0};          // deadlines passed
    std::atomic<std::uint64_t> written_off{0};  // threads given up (executor::write_off)
    std::atomic<std::uint64_t> escalated{0};    // the process was given up for one
};

struct watchdog_options {
    // Written-off threads of the process (still inside their application
    // call) at which the process is given up: each may hold what its call
    // took (a database connection, memory), and a replacement thread runs
    // beside it. server.max_written_off.
    unsigned max_written_off = 4;
    // How long the reactor of a call may take to answer for it once the
    // deadline passed: longer, and the application blocks the reactor itself
    // (the inline executor, or native code), which nothing but a new process
    // frees.
    std::chrono::milliseconds reactor_grace{2000};
    // How long an application asked to stop (its task cancelled) may take
    // to end: longer, and it swallows the cancellation or blocks its loop.
    std::chrono::milliseconds stop_grace{5000};
    // Given the reason, once: replace this process (or, alone, exit).
    std::function<void(const std::string& why)> give_up;
    // How the log names this process ("worker process 1 (pid 123)") and
    // each executor ("'default' (pool)"), in the deployment's order.
    std::string process_name;
    std::vector<std::string> executor_names;
};

class M0_INTERNAL_API watchdog {
public:
    watchdog(watchdog_options options, std::vector<executor*> executors);
    ~watchdog();
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

    // The thread looks every `tick` (a tenth of the shortest timeout, at
    // most 250 ms, at least 10 ms).
    void start(std::chrono::nanoseconds shortest_timeout);
    void stop();

    executor* executor_at(std::size_t index) const noexcept { return executors_.at(index); }
    const executor_counts& counts(std::size_t executor) const noexcept { return *counts_.at(executor); }
    std::size_t executor_count() const noexcept { return executors_.size(); }

    // From call.
    void add(std::shared_ptr<call> c);
    void remove(call& c);
    executor_counts& counts_of(std::size_t executor) noexcept { return *counts_.at(executor); }

private:
    void run();
    void look(std::chrono::steady_clock::time_point now);
    void expire(const std::shared_ptr<call>& c, std::int64_t now_ns);
    // Once: counts it for `executor` (whose call it was) and calls options_.give_up.
    void give_up(std::size_t executor, const std::string& why);
    std::string executor_name(std::size_t i) const;

    const watchdog_options options_;
    const std::vector<executor*> executors_;
    std::vector<std::unique_ptr<executor_counts>> counts_;

    std::mutex mutex_;  // calls_, stopping_
    std::condition_variable wake_;
    std::vector<std::shared_ptr<call>> calls_;  // a call knows its index (swap-remove)
    bool stopping_ = false;
    std::thread thread_;
    std::chrono::nanoseconds tick_{std::chrono::milliseconds(250)};

    // Watchdog thread only.
    unsigned written_off_ = 0;  // threads written off so far (never back: they hold what their call took)
    bool given_up_ = false;
};

// One application call (request_deadline). Made on the reactor by
// mount_deadlines::watch.
class M0_INTERNAL_API call final : public request_deadline, public std::enable_shared_from_this<call> {
public:
    // `ex` answers for the app at the deadline, or else `answer` runs;
    // `what` names the call when there is no exchange.
    call(watchdog& dog, std::size_t executor, std::string_view mount, std::chrono::nanoseconds timeout,
         http::exchange_ptr ex, std::shared_ptr<reactor_handle> reactor, std::string what = {},
         std::function<void()> answer = nullptr);
    // The exchange is let go on the reactor that made the call: a call the
    // watchdog drops last must not run the exchange's destructor on its thread.
    ~call() override;

    void started(std::function<stuck_report()> where, std::function<void()> stop) override;
    void produced(bool head) noexcept override;
    void waiting_on_server(bool waiting) noexcept override;
    void set_timeout(std::optional<std::chrono::nanoseconds> timeout) noexcept override;
    void finished() noexcept override;
    bool expired() const noexcept override { return state_.load() == state::expired; }
    bool answered_for_app() override;

private:
    friend class watchdog;
    enum class state : int { waiting, running, expired, done };
    static std::int64_t now_ns() noexcept;
    // Reactor thread: 504, or an abort once the head went out.
    void answer();

    watchdog& dog_;
    const std::size_t executor_;
    const std::string_view mount_;  // the mount's prefix, owned by the deployment
    http::exchange_ptr ex_;  // reactor-thread object: released there (~call)
    const std::shared_ptr<reactor_handle> reactor_;
    const std::thread::id reactor_thread_ = std::this_thread::get_id();  // made by watch() on the reactor
    const std::string what_;
    const std::function<void()> answer_;

    std::atomic<state> state_{state::waiting};
    // The clock: the call's current allowance started at mark_ns_ (steady
    // clock); while paused_at_ns_ is set the clock stands, and resuming moves
    // mark_ns_ on by the pause.
    std::atomic<std::int64_t> mark_ns_{0};
    std::atomic<std::int64_t> paused_at_ns_{0};
    std::atomic<std::int64_t> timeout_ns_;  // 0: lifted by the application
    std::atomic<bool> head_sent_{false};
    std::atomic<long> thread_{0};           // gettid of the thread running the application

    // Taken only on the expiry path: finished() and the write-off decision.
    std::mutex expiry_mutex_;
    bool returned_ = false;
    std::function<stuck_report()> where_;  // set before the call is added; read by the watchdog
    std::function<void()> stop_;           // likewise; run on the reactor after the answer

    // Reactor thread only.
    bool answered_ = false;
    // Watchdog thread only (and the index, under the registry's mutex).
    std::size_t index_ = 0;
    std::int64_t expired_at_ns_ = 0;
    bool written_off_ = false;
    std::atomic<bool> reactor_answered_{false};
};

// deadline_watch of one mount on one reactor.
class M0_INTERNAL_API mount_deadlines final : public deadline_watch {
public:
    mount_deadlines(watchdog* dog, std::size_t executor, std::string mount, std::chrono::nanoseconds timeout,
                    std::shared_ptr<reactor_handle> reactor)
        : dog_(dog), executor_(executor), mount_(std::move(mount)), timeout_(timeout), reactor_(std::move(reactor)) {}
    std::chrono::nanoseconds timeout() const noexcept override { return dog_ ? timeout_ : std::chrono::nanoseconds(0); }
    std::shared_ptr<request_deadline> watch(http::exchange_ptr ex) override;
    std::shared_ptr<request_deadline> watch_call(std::string what, std::function<void()> answer) override;

private:
    watchdog* dog_;
    const std::size_t executor_;
    const std::string mount_;
    const std::chrono::nanoseconds timeout_;
    const std::shared_ptr<reactor_handle> reactor_;
};

}  // namespace m0::deadline
