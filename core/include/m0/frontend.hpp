#pragma once
// Frontend seam: owns a protocol on a reactor's listeners.
// Most frontends speak HTTP/1.1 through the core engine (m0/http.hpp) and only
// implement an http::handler; the frontend itself wires that up per reactor.
#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/plugin.hpp>
#include <m0/serving.hpp>
#include <m0/reactor.hpp>

namespace m0 {

class frontend : public serving_hooks {
public:
    // Each reactor thread, once, before its loop runs: start accepting on
    // ctx.listeners (asynchronously; return at once) and add drain hooks to
    // ctx. The scheduler then runs the loop. Under `mounts:` ctx is this
    // mount's copy of the reactor's context; http::serve() then registers
    // the handler with the core's router (reactor_context::mount).
    void start_reactor(reactor_context& ctx) override = 0;
    // True when this frontend needs a listener of its own on every reactor
    // whatever server.listener says.
    virtual bool needs_per_reactor_listeners() const { return false; }
    // The executor used when the config names none (`executor.type`, or a
    // mount's `executor`).
    // Native frontends answer on the reactor; a WSGI frontend wants `pool`.
    virtual const char* default_executor() const { return "inline"; }
};

}  // namespace m0
