#pragma once
// The lifecycle hooks that frontends and modules share: once per serving
// process, once per reactor thread, and around fork().
#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/metrics.hpp>
#include <m0/reactor.hpp>

namespace m0 {

class service_registry;

// What the per-process hooks get.
struct serving_context {
    unsigned process_index = 0;  // 0..process_count-1 (server.workers)
    unsigned process_count = 1;
    unsigned reactor_count = 1;   // reactor threads in this process (server.threads)
    service_registry* services = nullptr;
};

// The order, in every serving process (each child under server.workers):
//   prepare(executor) → executors start → start_serving → start_reactor (each
//   reactor thread) … serving … drain → stop_reactor (each reactor thread) →
//   stop_serving → executors stop.
// A hook that throws at start stops the process with exit code 1 and the
// exception's message. Plugins are built once, in the first process, before
// any fork (see before_fork).
class serving_hooks {
public:
    virtual ~serving_hooks() = default;
    // Main thread, once per serving process, after construction and before
    // the executor starts: register executor thread hooks here. A frontend
    // gets its own executor (its mount's, under `mounts:`); a module gets
    // this once for each executor of the deployment.
    virtual void prepare(executor& ex) {}
    // Main thread, once per serving process, after the executors started and
    // before any reactor runs (an ASGI lifespan startup, a bus subscriber).
    virtual void start_serving(serving_context& ctx) {}
    // Each reactor thread, once, before its loop runs. Add drain hooks to ctx
    // here; return at once (work runs on ctx.io).
    virtual void start_reactor(reactor_context& ctx) {}
    // Each reactor thread, once, after its loop ended (before the io_context
    // is destroyed): release per-reactor state.
    virtual void stop_reactor(reactor_context& ctx) {}
    // Main thread, once per serving process, after the drain and before the
    // executors stop: release producers that wait on reactors now gone.
    virtual void stop_serving(serving_context& ctx) {}
    // With `metrics.listen`: the serving process's metrics sampler thread,
    // a few times a second between start_serving and stop_serving. Report
    // the plugin's numbers (m0/metrics.hpp) from counters it keeps anyway:
    // relaxed atomic reads, never a lock the request path takes.
    virtual void report_metrics(metrics_writer& out) const {}
    // Prefork (server.workers > 1): the supervisor forks the serving processes
    // from its main thread while no other thread exists. before_fork runs just
    // before each fork(); then after_fork_parent in the supervisor (also when
    // fork() failed) or after_fork_child in the new process, before prepare().
    // A plugin holding process-wide runtime state (an embedded interpreter)
    // makes it fork-safe here.
    virtual void before_fork() {}
    virtual void after_fork_parent() {}
    virtual void after_fork_child() {}
};

}  // namespace m0
