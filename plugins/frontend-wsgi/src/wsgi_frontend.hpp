#pragma once
// The `wsgi` frontend: loads the application at start-up, gives executor
// threads their Python thread state, serves HTTP/1.1 per reactor.
#include <memory>
#include <mutex>
#include <vector>

#include <m0/frontend.hpp>
#include <m0/plugin.hpp>
#include <m0/static_files/static_mount.hpp>

#include "wsgi_call.hpp"
#include "wsgi_handler.hpp"

namespace m0::wsgi {

class wsgi_frontend final : public frontend {
public:
    // Reads the section, starts the interpreter and imports the application.
    // Throws (config_error, std::runtime_error) when any of that fails.
    explicit wsgi_frontend(plugin_context& ctx);
    ~wsgi_frontend() override;

    const char* default_executor() const override { return "pool"; }
    void prepare(executor& ex) override;
    // The reactors are gone: a generator still streaming would wait forever
    // for room that no reactor will make. Released, it stops at its next
    // chunk; the executor's stop then finds its thread free.
    void stop_serving(serving_context&) override { app_.streams.release_all(); }

    // Prefork: the application was imported before the fork and is shared
    // copy-on-write; each process then runs its own interpreter.
    void before_fork() override;
    void after_fork_parent() override;
    void after_fork_child() override;

    void start_reactor(reactor_context& ctx) override;

private:
    application app_;
    std::unique_ptr<static_files::static_mounts> statics_;
    std::mutex mutex_;
    // Kept until the frontend goes: completions may still reach a handler's
    // jobs after its reactor loop ended.
    std::vector<std::unique_ptr<wsgi_handler>> handlers_;
};

}  // namespace m0::wsgi
