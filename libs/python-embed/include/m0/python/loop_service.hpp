#pragma once
// The asyncio executor's loops, as a service (m0/services.hpp) for the
// frontends that run coroutines on them outside a request: an ASGI lifespan
// startup and shutdown, once per loop.
#include <Python.h>

#include <string_view>

namespace m0::python {

class loop_service {
public:
    static constexpr std::string_view service_name = "m0.asyncio.loops";
    static constexpr unsigned service_version = 1;
    virtual ~loop_service() = default;
    // After the executor started: how many loops run in this process.
    virtual unsigned loop_count() const = 0;
    // Borrowed reference to loop `index`'s event loop object (GIL held to use
    // it; from another thread only through its thread-safe methods, e.g.
    // asyncio.run_coroutine_threadsafe). Null before start() or after stop.
    virtual PyObject* loop(unsigned index) const = 0;
};

}  // namespace m0::python
