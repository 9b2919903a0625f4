#pragma once
// Frontend seam: owns a protocol on a worker's listeners (GUIDE section 2).
// Most frontends speak HTTP/1.1 through the core engine (m0/http.hpp) and only
// implement an http::handler; the frontend itself wires that up per worker.
#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/worker.hpp>

namespace m0 {

class config_node;

class frontend {
public:
    virtual ~frontend() = default;
    // Main thread, once, after construction and before any worker or the
    // executor starts: register executor thread hooks here.
    virtual void prepare(executor& ex) {}
    // Each worker thread, once, before its loop runs: start accepting on
    // ctx.listeners (asynchronously; return at once) and set ctx.on_drain /
    // ctx.on_force_close. The scheduler then runs the loop.
    virtual void start_worker(worker_context& ctx) = 0;
    // Each worker thread, once, after its loop ended (before the io_context
    // is destroyed): release per-worker state.
    virtual void stop_worker(worker_context& ctx) {}
    // True when this frontend needs a listener of its own on every worker
    // whatever server.listener says.
    virtual bool needs_per_worker_listeners() const { return false; }
    // The executor used when the config names none (`executor.type`).
    // Native frontends answer on the reactor; a WSGI frontend wants `pool`.
    virtual const char* default_executor() const { return "inline"; }
    // Prefork (server.workers > 1): the supervisor forks the serving processes
    // from its main thread while no other thread exists. before_fork runs just
    // before each fork(); then after_fork_parent in the supervisor (also when
    // fork() failed) or after_fork_child in the new process, before prepare().
    // A frontend holding process-wide runtime state (an embedded interpreter)
    // makes it fork-safe here.
    virtual void before_fork() {}
    virtual void after_fork_parent() {}
    virtual void after_fork_child() {}
};

// What a plugin factory receives.
struct plugin_context {
    const config_node* section = nullptr;  // `frontend:` or `executor.<name>:`
    const config_node* root = nullptr;     // the whole document (read-only use)
    unsigned worker_count = 1;
};

}  // namespace m0
