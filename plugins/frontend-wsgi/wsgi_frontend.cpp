// The `wsgi` frontend plugin: loads the application at start-up, gives
// executor threads their Python thread state, serves HTTP/1.1 per worker.
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/log.hpp>
#include <m0/plugin.hpp>
#include <m0/python/app_import.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/fork.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>

#include "static_mount.hpp"
#include "wsgi_call.hpp"
#include "wsgi_handler.hpp"
#include "wsgi_objects.hpp"
#include "wsgi_settings.hpp"

namespace m0::wsgi {
namespace {

class wsgi_frontend final : public frontend {
public:
    explicit wsgi_frontend(plugin_context& ctx) {
        app_.config = read_settings(*ctx.section, *ctx.root);
        python::interpreter_settings py = python::read_settings(*ctx.root);
        py.chdir = app_.config.chdir;
        statics_ = std::make_unique<static_files::static_mounts>(app_.config.statics);
        python::start(py);

        python::gil_scope gil;
        if (!init_object_types()) {
            python::log_exception("wsgi: cannot create the WSGI types");
            throw std::runtime_error("wsgi: cannot create the WSGI types");
        }
        app_.callable = python::import_callable(app_.config.app);
        app_.environ = std::make_unique<environ_builder>(app_.config);
        handlers_.resize(ctx.worker_count ? ctx.worker_count : 1);
    }

    ~wsgi_frontend() override {
        python::gil_scope gil;
        app_.environ.reset();
        app_.callable = python::py_ref();
    }

    const char* default_executor() const override { return "pool"; }

    void prepare(executor& ex) override {
        // Under `inline` the job runs on the reactor, which therefore cannot
        // pull the body while the job waits for it: bodies stay whole.
        app_.input_streams = ex.name() != "inline";
        ex.add_thread_hooks(thread_hooks{
            [] { python::attach_thread(); },
            [] {
                {
                    python::gil_scope gil;
                    request_objects::clear_thread_cache();
                }
                python::detach_thread();
            }});
    }

    // Prefork: the application was imported before the fork and is shared
    // copy-on-write; each process then runs its own interpreter.
    void before_fork() override { python::before_fork(); }
    void after_fork_parent() override { python::after_fork_parent(); }
    void after_fork_child() override { python::after_fork_child(); }

    void start_worker(worker_context& ctx) override {
        wsgi_handler* handler = nullptr;
        {
            std::lock_guard lock(mutex_);
            if (ctx.index >= handlers_.size()) handlers_.resize(ctx.index + 1);
            handlers_[ctx.index] = std::make_unique<wsgi_handler>(app_, *statics_, *ctx.lane);
            handler = handlers_[ctx.index].get();
        }
        http::serve(ctx, *handler);
    }

private:
    application app_;
    std::unique_ptr<static_files::static_mounts> statics_;
    std::mutex mutex_;
    // Kept until the frontend goes: completions may still reach a handler's
    // jobs after its worker loop ended.
    std::vector<std::unique_ptr<wsgi_handler>> handlers_;
};

std::unique_ptr<frontend> make_wsgi_frontend(plugin_context& ctx) {
    return std::make_unique<wsgi_frontend>(ctx);
}

}  // namespace
}  // namespace m0::wsgi

M0_FRONTEND_PLUGIN("wsgi", "PEP 3333 applications (Django, Flask) on embedded CPython",
                   m0::wsgi::make_wsgi_frontend);
