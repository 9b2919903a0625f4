#pragma once
// The `asgi` frontend: loads the application at start-up, runs its lifespan
// on every loop of the asyncio executor, serves HTTP/1.1 per reactor.
#include <memory>
#include <mutex>
#include <vector>

#include <m0/frontend.hpp>
#include <m0/plugin.hpp>
#include <m0/python/ref.hpp>

#include "asgi_call.hpp"
#include "asgi_handler.hpp"

namespace m0::asgi {

class asgi_frontend final : public frontend {
public:
    // Reads the section, starts the interpreter and imports the application.
    explicit asgi_frontend(plugin_context& ctx);
    ~asgi_frontend() override;

    const char* default_executor() const override { return "asyncio"; }
    // Refuses any executor but asyncio: a coroutine needs a running loop.
    void prepare(executor& ex) override;
    // Lifespan startup on every loop, before the first request.
    void start_serving(serving_context& ctx) override;
    // Lifespan shutdown on every loop, after the drain.
    void stop_serving(serving_context& ctx) override;
    void start_reactor(reactor_context& ctx) override;

    void before_fork() override;
    void after_fork_parent() override;
    void after_fork_child() override;

private:
    application app_;
    std::vector<python::py_ref> lifespans_;  // one per loop whose startup completed
    std::mutex mutex_;
    // Kept until the frontend goes: completions may still reach a handler's
    // jobs after its reactor loop ended.
    std::vector<std::unique_ptr<asgi_handler>> handlers_;
};

}  // namespace m0::asgi
