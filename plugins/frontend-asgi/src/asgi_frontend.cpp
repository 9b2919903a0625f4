#include "asgi_frontend.hpp"

#include <stdexcept>
#include <string>

#include <m0/config.hpp>
#include <m0/log.hpp>
#include <m0/python/app_import.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/fork.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/python/loop_service.hpp>
#include <m0/services.hpp>

#include "asgi_channel.hpp"
#include "asgi_glue.hpp"
#include "asgi_ws_channel.hpp"

namespace m0::asgi {

namespace {

// A shutdown that does not finish by then (a loop blocked by a coroutine
// that never yields) must not hold the process after its drain.
constexpr double lifespan_shutdown_timeout_s = 10.0;

// Runs `method` of a Lifespan on `loop` and waits for its (kind, text)
// outcome; the wait releases the GIL. Throws with the Python reason.
std::pair<std::string, std::string> run_on_loop(PyObject* lifespan, const char* method, PyObject* loop,
                                                double timeout_s) {
    python::py_ref asyncio(PyImport_ImportModule("asyncio"));
    python::py_ref coro(asyncio ? PyObject_CallMethod(lifespan, method, nullptr) : nullptr);
    python::py_ref fut(coro ? PyObject_CallMethod(asyncio.get(), "run_coroutine_threadsafe", "OO", coro.get(), loop)
                            : nullptr);
    python::py_ref result;
    if (fut) {
        result = timeout_s > 0 ? python::py_ref(PyObject_CallMethod(fut.get(), "result", "d", timeout_s))
                               : python::py_ref(PyObject_CallMethod(fut.get(), "result", nullptr));
    }
    const char* kind = nullptr;
    const char* text = nullptr;
    if (!result || !PyArg_ParseTuple(result.get(), "ss", &kind, &text)) {
        const std::string tb = python::take_exception_text();
        throw std::runtime_error(python::last_line(tb));
    }
    return {kind, text};
}

}  // namespace

asgi_frontend::asgi_frontend(plugin_context& ctx) {
    auto py = python::read_settings_with(*ctx.root, [&] { app_.config = read_settings(*ctx.section); });
    py.chdir = app_.config.chdir;
    python::start(py);
    python::gil_scope gil;
    if (!init_glue() || !init_channel_type() || !init_ws_channel_type()) {
        python::log_exception("asgi: cannot set up the ASGI glue");
        throw std::runtime_error("asgi: cannot set up the ASGI glue");
    }
    app_.callable = python::import_callable(app_.config.app);
    app_.states = python::py_ref(PyDict_New());
    if (!app_.states || !app_.scope.init()) {
        python::log_exception("asgi: cannot set up the ASGI scope");
        throw std::runtime_error("asgi: cannot set up the ASGI scope");
    }
    handlers_.resize(ctx.reactor_count ? ctx.reactor_count : 1);
}

asgi_frontend::~asgi_frontend() {
    python::gil_scope gil;
    lifespans_.clear();
    app_.scope.clear();
    app_.states = python::py_ref();
    app_.callable = python::py_ref();
}

void asgi_frontend::prepare(executor& ex) {
    if (ex.name() != "asyncio")
        throw std::runtime_error("asgi: the ASGI application '" + app_.config.app + "' needs an event loop; set " +
                                 "executor.type: asyncio (the executor is '" + std::string(ex.name()) + "')");
}

void asgi_frontend::start_serving(serving_context& ctx) {
    if (app_.config.lifespan == lifespan_mode::off) return;
    auto* loops = ctx.services ? ctx.services->find<python::loop_service>() : nullptr;
    if (!loops) throw std::runtime_error("asgi: no asyncio loops to run the lifespan on");
    const bool required = app_.config.lifespan == lifespan_mode::on;
    python::gil_scope gil;
    for (unsigned i = 0; i < loops->loop_count(); ++i) {
        python::py_ref lifespan(PyObject_CallFunctionObjArgs(glue(glue_name::lifespan), app_.callable.get(),
                                                                 app_.states.get(), nullptr));
        if (!lifespan) {
            python::log_exception("asgi: cannot create the lifespan");
            throw std::runtime_error("asgi: cannot create the lifespan");
        }
        auto [kind, text] = run_on_loop(lifespan.get(), "startup", loops->loop(i), 0);
        if (kind == "ok") {
            lifespans_.push_back(lifespan);
            continue;
        }
        if (kind == "failed")
            throw std::runtime_error("asgi: " + app_.config.app + ": lifespan startup failed: " + text);
        // "error" (the app raised) or "returned" (it never answered).
        if (required) {
            if (!text.empty()) log::error("asgi: " + app_.config.app + ": lifespan startup raised:\n" + text);
            throw std::runtime_error("asgi: " + app_.config.app + ": lifespan startup " +
                                     (kind == "error" ? "raised " + python::last_line(text)
                                                      : std::string("returned without completing")) +
                                     " (lifespan: on)");
        }
        if (i == 0)
            log::info("asgi: " + app_.config.app + " does not support the lifespan protocol (" +
                      (kind == "error" ? python::last_line(text) : std::string("returned")) +
                      "); serving without it");
        return;  // unsupported: the same on every loop
    }
}

void asgi_frontend::stop_serving(serving_context& ctx) {
    if (lifespans_.empty()) return;
    auto* loops = ctx.services ? ctx.services->find<python::loop_service>() : nullptr;
    python::gil_scope gil;
    for (std::size_t i = 0; i < lifespans_.size(); ++i) {
        PyObject* loop = loops ? loops->loop(static_cast<unsigned>(i)) : nullptr;
        if (!loop) break;
        try {
            auto [kind, text] = run_on_loop(lifespans_[i].get(), "shutdown", loop, lifespan_shutdown_timeout_s);
            if (kind == "failed") log::error("asgi: " + app_.config.app + ": lifespan shutdown failed: " + text);
            if (kind == "error") log::error("asgi: " + app_.config.app + ": lifespan shutdown raised:\n" + text);
        } catch (const std::exception& e) {
            log::error("asgi: " + app_.config.app + ": lifespan shutdown: " + e.what());
        }
    }
    lifespans_.clear();
}

void asgi_frontend::start_reactor(reactor_context& ctx) {
    asgi_handler* handler = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (ctx.index >= handlers_.size()) handlers_.resize(ctx.index + 1);
        handlers_[ctx.index] = std::make_unique<asgi_handler>(app_, *ctx.lane, ctx.deadlines);
        handler = handlers_[ctx.index].get();
    }
    http::serve(ctx, *handler);
}

void asgi_frontend::before_fork() { python::before_fork(); }
void asgi_frontend::after_fork_parent() { python::after_fork_parent(); }
void asgi_frontend::after_fork_child() { python::after_fork_child(); }

}  // namespace m0::asgi
