#pragma once
// A tiny line protocol frontend for scheduler tests, so they exercise the
// scheduler alone (no HTTP engine). One request per line:
//   "fast"      → "ok <worker>\n"
//   "slow <ms>" → "done <worker>\n" after a timer (request stays in flight)
//   "throw"     → the worker's handler throws (a crash)
//   "hold"      → "held <worker>\n" once release_holds() is called; until
//                 then the worker's thread is blocked and accepts nothing
// Connections stay open for further lines (keep-alive).
#include <condition_variable>
#include <mutex>

#include <m0/frontend.hpp>

namespace m0::test {

class line_frontend final : public frontend {
public:
    // Worker `fail_worker` throws from start_reactor (partial start tests).
    explicit line_frontend(int fail_worker = -1) : fail_worker_(fail_worker) {}
    void start_reactor(reactor_context& ctx) override;
    // Lets every "hold" request (past and future) answer.
    void release_holds();
    // Blocks the calling worker thread until release_holds().
    void wait_for_release();

private:
    int fail_worker_;
    std::mutex hold_mutex_;
    std::condition_variable hold_released_cv_;
    bool holds_released_ = false;
};

}  // namespace m0::test
