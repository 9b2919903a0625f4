// The plugin's one exported symbol: `executor.type: asyncio`.
#include <m0/config.hpp>
#include <m0/plugin.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/services.hpp>

#include "asyncio_config.hpp"
#include "asyncio_executor.hpp"

namespace {

std::unique_ptr<m0::executor> make_asyncio_executor(m0::plugin_context& ctx) {
    m0::asyncio::asyncio_options options;
    const auto py = m0::python::read_settings_with(
        *ctx.root, [&] { options = m0::asyncio::read_asyncio_options(*ctx.section); });
    // Usually already running (the Python frontend starts it first, with its
    // chdir); then this only adds python.path entries.
    m0::python::start(py);
    m0::asyncio::check_loop_kind(*ctx.section, options, py.venv);
    auto ex = std::make_unique<m0::asyncio::asyncio_executor>(options);
    if (ctx.services) ex->provide_loops(*ctx.services);
    return ex;
}

}  // namespace

M0_EXECUTOR_PLUGIN("asyncio", "asyncio (or uvloop) event loops on threads of their own: coroutine jobs",
                   make_asyncio_executor);
