#pragma once
// The reactor threads of one serving process, as m0's schedulers run them:
// one io_context each (concurrency hint 1), a lane of every executor, the
// frontend's start_reactor/stop_reactor, the loop over run_reactor_pass, core
// pinning, the stop flag, the drain phases with their per-reactor reports,
// crash accounting and the bounded stop of a reactor held by application
// code. What differs between schedulers — how connections reach the
// reactors — is a connection_placement they plug in.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/reactor.hpp>
#include <m0/scheduler.hpp>

namespace m0::reactors {

// A listener as a reactor_group sees it: one more call than m0::listener.
class reactor_listener : public listener {
public:
    // Takes no new connection from now on: accepts still get what the
    // listener already holds (an accepted socket on its way to the handler,
    // a hand-off queue), then operation_aborted. The reactor leaves only
    // once no handler is ready to run, so a hand-over already posted is
    // delivered. Reactor thread only.
    virtual void cancel() = 0;
};

// How connections reach a group's reactors: the part of a scheduler that is
// its own. Called on the thread that starts and drains the group unless said.
class connection_placement {
public:
    virtual ~connection_placement() = default;
    // Before any reactor exists: bind (or take from `options`) the listening
    // sockets. Returns the bound addresses, one per configured address.
    virtual std::vector<boost::asio::ip::tcp::endpoint> open(scheduler_options& options) = 0;
    // Reactor `reactor`'s listeners, made on its io_context before it starts.
    // `stats` are its counters (closed connections, live ones).
    virtual std::vector<std::unique_ptr<reactor_listener>> listeners_for(unsigned reactor,
                                                                         boost::asio::io_context& io,
                                                                         reactor_stats& stats) = 0;
    // Every reactor has started its frontend: placing may begin.
    virtual void reactors_started() {}
    // A drain or a hard stop begins: place nothing more. Idempotent.
    virtual void stop_placing() noexcept {}
    // Every reactor has been joined (or detached): release the sockets.
    virtual void close() noexcept = 0;
};

class reactor_group final : public reactor_set {
public:
    // Throws std::invalid_argument for reactors outside 1..max_reactors, no
    // executor or no address, before any thread starts.
    reactor_group(frontend& fe, std::vector<executor*> executors, scheduler_options options,
                  std::unique_ptr<connection_placement> placement);
    ~reactor_group() override;
    reactor_group(const reactor_group&) = delete;
    reactor_group& operator=(const reactor_group&) = delete;

    void start() override;
    std::vector<reactor_report> drain(std::chrono::milliseconds timeout) override;
    void shutdown() override;

    unsigned reactor_count() const override;
    unsigned crashed_reactor_count() const override;
    bool is_running(unsigned reactor) const override;
    const reactor_stats& stats(unsigned reactor) const override;
    std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const override;

private:
    struct reactor;
    struct shared_state;
    void run_reactor(reactor& r);
    // Stops every reactor and joins it; one still running at grace_deadline
    // is detached (its resources leaked, never freed under it).
    void stop_and_join_all(std::chrono::steady_clock::time_point grace_deadline);
    void raise_phase(int to);

    frontend& frontend_;
    std::vector<executor*> executors_;
    scheduler_options options_;
    std::unique_ptr<connection_placement> placement_;
    std::shared_ptr<shared_state> state_;
    std::vector<std::unique_ptr<reactor>> reactors_;
    std::vector<boost::asio::ip::tcp::endpoint> bound_;
    std::mutex drain_mutex_;  // held for the whole of drain()
    bool started_ = false;
    bool finished_ = false;
    std::vector<reactor_report> reports_;
};

}  // namespace m0::reactors
