#pragma once
// One pass of a reactor loop that serves an executor lane: the one place the
// executor protocol meets an io_context. The scheduler's reactors, the
// executor tests and the hand-off benchmark all loop over this.
#include <chrono>
#include <cstddef>

#include <boost/asio/io_context.hpp>

#include <m0/executor.hpp>

namespace m0 {

// Handlers a pass runs at most before the lane's completions get their turn.
// io_context::poll() also runs what its handlers post meanwhile, so a chain
// of follow-ups (a fan-out to thousands of held streams, written in slices)
// would otherwise keep every completion — the answers of the requests that
// publish — waiting until the whole chain ended.
inline constexpr std::size_t max_handlers_per_pass = 64;

// What a reactor loop carries from one pass to the next (optional).
struct reactor_pass_state {
    // The last pass polled the io_context and has not blocked since: its
    // poll ended with an epoll_wait that found nothing, and all that ran
    // after it were completions, whose follow-ups are either posted handlers
    // or socket operations the blocking wait sees. So the next pass need
    // not poll again: it goes to the completions and, with none, straight
    // to the blocking wait, which returns at once if anything is ready.
    bool io_polled = false;
};

// Runs ready handlers (at most max_handlers_per_pass) and arrived
// completions; if none ran, announces the
// wait to the lane (which re-checks its completions) and blocks for one
// handler — an executor thread wakes the reactor only after such an
// announcement, so no wake is lost and none is sent to a busy reactor.
// After the block it runs the completions that arrived meanwhile (a reactor
// waiting on its executor is mostly woken for them). `until` bounds the
// block (time_point::max(): no bound). With `state`, a pass right after one
// that polled and did not block skips the poll (see reactor_pass_state),
// which spares an epoll_wait per pass while completions come in. Returns
// how many handlers and completions ran.
inline std::size_t run_reactor_pass(
    boost::asio::io_context& io, executor_lane& lane,
    std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max(),
    reactor_pass_state* state = nullptr) {
    const bool poll = !state || !state->io_polled;
    std::size_t ran = 0;
    if (poll)
        while (ran < max_handlers_per_pass && io.poll_one()) ++ran;
    // Stopped at the bound: the poll did not end on an empty epoll_wait.
    const bool poll_drained = ran < max_handlers_per_pass;
    ran += lane.poll_completions();
    lane.on_reactor_pass();
    bool blocked = false;
    if (ran == 0 && lane.prepare_to_wait()) {
        if (until == std::chrono::steady_clock::time_point::max())
            io.run_one();
        else
            io.run_one_until(until);
        lane.finished_waiting();
        ran += lane.poll_completions();
        blocked = true;
    }
    if (state) state->io_polled = poll && poll_drained && !blocked;
    return ran;
}

}  // namespace m0
