#pragma once
// One pass of a reactor loop that serves an executor lane: the one place the
// executor protocol meets an io_context. The scheduler's reactors, the
// executor tests and the hand-off benchmark all loop over this.
#include <chrono>
#include <cstddef>

#include <boost/asio/io_context.hpp>

#include <m0/executor.hpp>

namespace m0 {

// Runs ready handlers and arrived completions; if none ran, announces the
// wait to the lane (which re-checks its completions) and blocks for one
// handler — an executor thread wakes the reactor only after such an
// announcement, so no wake is lost and none is sent to a busy reactor.
// After the block it runs the completions that arrived meanwhile: a reactor
// waiting on its executor is mostly woken for them, and taking them now
// spares the next pass a poll of the sockets (an epoll_wait) that would
// find nothing. `until` bounds the block (time_point::max(): no bound).
// Returns how many handlers and completions ran.
inline std::size_t run_reactor_pass(
    boost::asio::io_context& io, executor_lane& lane,
    std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max()) {
    std::size_t ran = io.poll();
    ran += lane.poll_completions();
    lane.on_reactor_pass();
    if (ran == 0 && lane.prepare_to_wait()) {
        if (until == std::chrono::steady_clock::time_point::max())
            io.run_one();
        else
            io.run_one_until(until);
        lane.finished_waiting();
        ran += lane.poll_completions();
    }
    return ran;
}

}  // namespace m0
