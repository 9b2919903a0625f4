#pragma once
// A tiny line protocol frontend for scheduler tests, so they exercise the
// scheduler alone (no HTTP engine). One request per line:
//   "fast"      → "ok <worker>\n"
//   "slow <ms>" → "done <worker>\n" after a timer (request stays in flight)
//   "throw"     → the worker's handler throws (a crash)
// Connections stay open for further lines (keep-alive).
#include <atomic>

#include <m0/frontend.hpp>

namespace m0::test {

class line_frontend final : public frontend {
public:
    // Worker `fail_worker` throws from start_worker (partial start tests).
    explicit line_frontend(int fail_worker = -1) : fail_worker_(fail_worker) {}
    void start_worker(worker_context& ctx) override;

private:
    int fail_worker_;
};

}  // namespace m0::test
