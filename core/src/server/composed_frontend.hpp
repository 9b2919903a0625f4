#pragma once
// The frontends and modules of a deployment as the one frontend the
// scheduler runs. Every hook goes to each module (in config order), then to
// each mounted frontend (in `mounts:` order); the stopping hooks in reverse.
//
// One mount at "/" (a deployment with the single `frontend:` key) is served
// directly: its frontend gets the worker's context. Several mounts each get,
// per worker, a copy of that context whose `lane` is the mount's executor
// lane and whose `mount` registers the frontend's handler with the worker's
// mount_router; the core then serves the router. Drain and force-close hooks
// the frontends add go to the worker's context.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/module.hpp>

#include "deadline/watchdog.hpp"
#include "http/mount_router.hpp"

namespace m0 {

// A frontend serving the paths under `prefix` on one of the deployment's
// executors.
struct mount_part {
    std::string prefix;          // canonical: "" for "/"
    std::string type;            // the frontend plugin's name, for messages
    frontend* fe = nullptr;
    std::size_t executor = 0;    // index into the scheduler's executors (reactor_context::executor_lanes)
    std::chrono::nanoseconds request_timeout{0};  // 0: no deadline
};

class composed_frontend final : public frontend {
public:
    composed_frontend(std::vector<mount_part> mounts, std::vector<module*> modules, unsigned reactor_count);

    // prepare() of each mounted frontend with its own executor, and of each
    // module with every executor (a module's thread hooks run wherever jobs do).
    void prepare_all(const std::vector<executor*>& executors);
    // The request deadlines of this serving process (before the reactors
    // start): each mount's frontend gets its deadline_watch on each reactor.
    // Null: no deadline is watched.
    void watch_deadlines(deadline::watchdog* dog) noexcept { watchdog_ = dog; }
    // The shortest request_timeout of the mounts (0: none has one).
    std::chrono::nanoseconds shortest_request_timeout() const noexcept;

    // On a failure the pieces already started are stopped again, in reverse.
    void start_serving(serving_context& ctx) override;
    void start_reactor(reactor_context& ctx) override;
    void stop_reactor(reactor_context& ctx) override;
    void stop_serving(serving_context& ctx) override;
    void report_metrics(metrics_writer& out) const override;
    void before_fork() override;
    void after_fork_parent() override;
    void after_fork_child() override;
    bool needs_per_reactor_listeners() const override;

private:
    // One worker's routing state; kept until the process ends, because the
    // worker's server (owned by its hooks) refers to the router until the
    // scheduler drops those hooks.
    struct worker_mounts {
        std::unique_ptr<http::mount_router> router;
        std::vector<reactor_context> contexts;  // one per mount, reserved up front: frontends may keep &ctx
        std::vector<std::unique_ptr<deadline::mount_deadlines>> deadlines;  // one per mount
    };
    // The deadline_watch of mount `i` on the reactor of `ctx`, kept in `into`.
    deadline_watch* deadlines_for(std::size_t i, reactor_context& ctx, worker_mounts& into);

    bool routed() const noexcept { return mounts_.size() > 1 || !mounts_.front().prefix.empty(); }

    std::vector<mount_part> mounts_;
    std::vector<module*> modules_;
    std::vector<serving_hooks*> parts_;  // modules, then frontends
    std::vector<std::unique_ptr<worker_mounts>> workers_;
    std::size_t started_ = 0;  // parts whose start_serving returned
    deadline::watchdog* watchdog_ = nullptr;
};

}  // namespace m0
