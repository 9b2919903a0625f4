#include "wsgi_frontend.hpp"

#include <stdexcept>

#include <m0/config.hpp>
#include <m0/python/app_import.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/fork.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/python/m0_module.hpp>
#include <m0/services.hpp>

#include "wsgi_objects.hpp"
#include "wsgi_settings.hpp"

namespace m0::wsgi {

wsgi_frontend::wsgi_frontend(plugin_context& ctx) {
    auto py = python::read_settings_with(*ctx.root, [&] { app_.config = read_settings(*ctx.section, *ctx.root); });
    py.chdir = app_.config.chdir;
    statics_ = std::make_unique<static_files::static_mounts>(app_.config.statics);
    python::start(py);

    // Modules are built before the frontend: the hub, if any, is there.
    app_.hub = ctx.services ? ctx.services->find<realtime::hub>() : nullptr;
    python::gil_scope gil;
    if (!python::install_m0_module(app_.hub)) {
        python::log_exception("wsgi: cannot create the m0 module");
        throw std::runtime_error("wsgi: cannot create the m0 module");
    }
    if (!init_object_types()) {
        python::log_exception("wsgi: cannot create the WSGI types");
        throw std::runtime_error("wsgi: cannot create the WSGI types");
    }
    app_.callable = python::import_callable(app_.config.app);
    app_.environ = std::make_unique<environ_builder>(app_.config);
    app_.checked = std::make_unique<checked_strings>();
    handlers_.resize(ctx.reactor_count ? ctx.reactor_count : 1);
}

wsgi_frontend::~wsgi_frontend() {
    python::gil_scope gil;
    app_.environ.reset();
    app_.checked.reset();
    app_.callable = python::py_ref();
}

void wsgi_frontend::prepare(executor& ex) {
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
        },
        [] { python::release_kept_gil(); }});
}

void wsgi_frontend::before_fork() { python::before_fork(); }
void wsgi_frontend::after_fork_parent() { python::after_fork_parent(); }
void wsgi_frontend::after_fork_child() { python::after_fork_child(); }

void wsgi_frontend::start_reactor(reactor_context& ctx) {
    wsgi_handler* handler = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (ctx.index >= handlers_.size()) handlers_.resize(ctx.index + 1);
        handlers_[ctx.index] = std::make_unique<wsgi_handler>(app_, *statics_, *ctx.lane, ctx.deadlines);
        handler = handlers_[ctx.index].get();
    }
    http::serve(ctx, *handler);
}

}  // namespace m0::wsgi
