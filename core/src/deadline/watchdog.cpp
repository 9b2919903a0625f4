#include "deadline/watchdog.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <m0/log.hpp>
#include <m0/recycling_allocator.hpp>

namespace m0::deadline {

namespace {

std::string seconds_text(std::int64_t ns) {
    char buf[32];
    if (ns >= 1'000'000'000)
        std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
    else
        std::snprintf(buf, sizeof buf, "%.0f ms", static_cast<double>(ns) / 1e6);
    return buf;
}

}  // namespace

std::int64_t call::now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

watchdog::watchdog(watchdog_options options, std::vector<executor*> executors)
    : options_(std::move(options)), executors_(std::move(executors)) {
    for (std::size_t i = 0; i < executors_.size(); ++i) counts_.push_back(std::make_unique<executor_counts>());
}

watchdog::~watchdog() { stop(); }

void watchdog::start(std::chrono::nanoseconds shortest_timeout) {
    using namespace std::chrono;
    tick_ = std::clamp<nanoseconds>(shortest_timeout / 10, milliseconds(10), milliseconds(250));
    thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "m0-deadlines");
        run();
    });
}

void watchdog::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    calls_.clear();
}

void watchdog::add(std::shared_ptr<call> c) {
    std::lock_guard lock(mutex_);
    c->index_ = calls_.size();
    calls_.push_back(std::move(c));
}

void watchdog::remove(call& c) {
    std::shared_ptr<call> last;  // destroyed after the lock: a call may be the last owner of its exchange
    std::lock_guard lock(mutex_);
    const std::size_t i = c.index_;
    if (i >= calls_.size() || calls_[i].get() != &c) return;
    last = std::move(calls_[i]);
    if (i + 1 != calls_.size()) {
        calls_[i] = std::move(calls_.back());
        calls_[i]->index_ = i;
    }
    calls_.pop_back();
}

void watchdog::run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        wake_.wait_for(lock, tick_);
        if (stopping_) break;
        lock.unlock();
        look(std::chrono::steady_clock::now());
        lock.lock();
    }
}

void watchdog::look(std::chrono::steady_clock::time_point now_tp) {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(now_tp.time_since_epoch()).count();
    std::vector<std::shared_ptr<call>> due, answered, blocked, unstoppable;
    const auto past = [&](const call& c, std::chrono::milliseconds grace) {
        return now - c.expired_at_ns_ > std::chrono::nanoseconds(grace).count();
    };
    {
        std::lock_guard lock(mutex_);
        for (const auto& c : calls_) {
            const auto st = c->state_.load();
            if (st == call::state::expired) {
                if (!c->reactor_answered_.load()) {
                    if (past(*c, options_.reactor_grace)) blocked.push_back(c);
                } else if (!c->stop_ || c->written_off_) {
                    answered.push_back(c);
                } else {
                    // Asked to stop: followed until it ends, or for the grace.
                    bool returned;
                    {
                        std::lock_guard expiry(c->expiry_mutex_);
                        returned = c->returned_;
                    }
                    if (returned)
                        answered.push_back(c);
                    else if (past(*c, options_.stop_grace))
                        unstoppable.push_back(c);
                }
                continue;
            }
            if (st != call::state::running || c->paused_at_ns_.load() != 0) continue;
            const std::int64_t timeout = c->timeout_ns_.load();
            if (timeout <= 0 || now - c->mark_ns_.load() < timeout) continue;
            auto expected = call::state::running;
            if (c->state_.compare_exchange_strong(expected, call::state::expired)) due.push_back(c);
        }
    }
    for (const auto& c : due) expire(c, now);
    for (const auto& c : answered) remove(*c);
    for (const auto& c : blocked) {
        remove(*c);
        give_up(c->executor_, "a reactor thread did not come back to answer a request whose deadline passed: the application "
                "blocks it (the inline executor, or native code)");
    }
    for (const auto& c : unstoppable) {
        remove(*c);
        give_up(c->executor_, "an application asked to stop at its deadline (its task cancelled) is still running " +
                std::to_string(options_.stop_grace.count()) +
                " ms later: it swallows the cancellation, or blocks its event loop");
    }
}

void watchdog::expire(const std::shared_ptr<call>& c, std::int64_t now) {
    auto& counts = counts_of(c->executor_);
    counts.hit.fetch_add(1, std::memory_order_relaxed);
    // Where it is stuck, before anything else changes: outside the call's
    // lock (a frontend's report may wait a moment for the interpreter, and
    // the stuck thread takes that lock when it returns).
    stuck_report report;
    if (c->where_) report = c->where_();
    bool written_off = false;
    {
        std::lock_guard lock(c->expiry_mutex_);
        // A thread that returned may already run another job: never write
        // that one off.
        if (!c->returned_) written_off = executor_at(c->executor_)->write_off(c->thread_.load());
    }
    c->written_off_ = written_off;
    if (written_off) {
        ++written_off_;
        counts.written_off.fetch_add(1, std::memory_order_relaxed);
    }
    const std::string what =
        c->ex_ ? std::string(c->ex_->req().method) + " " + std::string(c->ex_->req().path) : c->what_;
    std::string line = "request deadline: " + what + " (mount " +
                       (c->mount_.empty() ? std::string("/") : std::string(c->mount_)) + ", " +
                       options_.process_name + ", executor " + executor_name(c->executor_) + ") produced nothing for " + seconds_text(now - c->mark_ns_.load()) +
                       " (request_timeout " + seconds_text(c->timeout_ns_.load()) + "): answered for it";
    if (written_off)
        line += "; its thread is written off and replaced (" + std::to_string(written_off_) + " of " +
                std::to_string(options_.max_written_off) + " before the process is replaced)";
    else if (c->stop_)
        line += "; it is asked to stop";
    line += report.where.empty() ? "; where it was stuck is not known" : "; it was stuck at:\n" + report.where;
    log::warning(line);
    std::weak_ptr<call> weak = c;
    // The graces for the reactor's answer and for the app's stop count from
    // here: the report above may have waited for the GIL.
    c->expired_at_ns_ = call::now_ns();
    if (!c->reactor_->post([weak] {
            if (auto self = weak.lock()) {
                self->answered_for_app();
                if (self->stop_) self->stop_();
                self->reactor_answered_.store(true);
            }
        }))
        c->reactor_answered_.store(true);  // the reactor is gone: nothing to answer
    if (report.interpreter_wedged) {
        give_up(c->executor_, "the application holds the interpreter past its deadline: no Python code can run in this process");
    } else if (written_off && written_off_ >= options_.max_written_off) {
        give_up(c->executor_, std::to_string(written_off_) + " threads are written off (server.max_written_off " +
                std::to_string(options_.max_written_off) + ")");
    }
}

std::string watchdog::executor_name(std::size_t i) const {
    if (i < options_.executor_names.size()) return options_.executor_names[i];
    return "'" + std::string(executor_at(i)->name()) + "'";
}

void watchdog::give_up(std::size_t executor, const std::string& why) {
    if (given_up_) return;
    given_up_ = true;
    counts_of(executor).escalated.fetch_add(1, std::memory_order_relaxed);
    if (options_.give_up) options_.give_up(why);
}

call::call(watchdog& dog, std::size_t executor, std::string_view mount, std::chrono::nanoseconds timeout,
           http::exchange_ptr ex, std::shared_ptr<reactor_handle> reactor, std::string what,
           std::function<void()> answer)
    : dog_(dog), executor_(executor), mount_(mount), ex_(std::move(ex)), reactor_(std::move(reactor)),
      what_(std::move(what)), answer_(std::move(answer)), timeout_ns_(timeout.count()) {}

call::~call() {
    if (!ex_ || std::this_thread::get_id() == reactor_thread_) return;
    // If the reactor is gone (the process stops) it is released here.
    reactor_->post([ex = std::move(ex_)] {});
}

void call::started(std::function<stuck_report()> where, std::function<void()> stop) {
    where_ = std::move(where);
    stop_ = std::move(stop);
    // gettid is a system call: once per thread, not per request.
    static thread_local const long tid = ::gettid();
    thread_.store(tid);
    mark_ns_.store(now_ns());
    state_.store(state::running);
    dog_.add(shared_from_this());
}

void call::produced(bool head) noexcept {
    if (head) head_sent_.store(true);
    mark_ns_.store(now_ns());
}

void call::waiting_on_server(bool waiting) noexcept {
    const std::int64_t now = now_ns();
    if (waiting) {
        paused_at_ns_.store(now);
        return;
    }
    const std::int64_t since = paused_at_ns_.exchange(0);
    if (since != 0) mark_ns_.fetch_add(now - since);
}

void call::set_timeout(std::optional<std::chrono::nanoseconds> timeout) noexcept {
    mark_ns_.store(now_ns());
    timeout_ns_.store(timeout && timeout->count() > 0 ? timeout->count() : 0);
}

void call::finished() noexcept {
    auto expected = state::running;
    if (state_.compare_exchange_strong(expected, state::done)) {
        dog_.remove(*this);
        return;
    }
    std::lock_guard lock(expiry_mutex_);
    returned_ = true;
}

bool call::answered_for_app() {
    if (answered_) return true;
    if (state_.load() != state::expired) return false;
    answered_ = true;
    answer();
    return true;
}

void call::answer() {
    if (!ex_) {
        if (answer_) answer_();
        return;
    }
    ex_->set_outcome(http::request_outcome::timeout);
    if (head_sent_.load()) {
        ex_->abort();
        return;
    }
    ex_->respond(504, {{"Content-Type", "text/plain; charset=utf-8"}}, "Gateway Timeout\n");
}

std::shared_ptr<request_deadline> mount_deadlines::watch(http::exchange_ptr ex) {
    if (!dog_ || timeout_.count() <= 0) return nullptr;
    // One per application call, made and (mostly) freed on the reactor: from
    // its free list, not malloc.
    return std::allocate_shared<call>(recycling_allocator<call>{}, *dog_, executor_, mount_, timeout_, std::move(ex),
                                      reactor_);
}

std::shared_ptr<request_deadline> mount_deadlines::watch_call(std::string what, std::function<void()> answer) {
    if (!dog_ || timeout_.count() <= 0) return nullptr;
    return std::make_shared<call>(*dog_, executor_, mount_, timeout_, nullptr, reactor_, std::move(what),
                                  std::move(answer));
}

}  // namespace m0::deadline
