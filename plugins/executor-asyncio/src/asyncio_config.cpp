#include "asyncio_config.hpp"

#include <Python.h>

#include <string>

#include <m0/python/errors.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/ref.hpp>

namespace m0::asyncio {

asyncio_options read_asyncio_options(const config_node& section) {
    // Each key is checked on its own, so one run reports all their errors.
    config_errors errors;
    errors.check([&] { section.allow_keys({"loops", "loop", "ring_capacity"}); });
    asyncio_options o;
    errors.check([&] { o.loops = static_cast<unsigned>(section.integer("loops", 1, 1, 64)); });
    errors.check([&] {
        o.loop = section.one_of("loop", "asyncio", {"asyncio", "uvloop"}) == "uvloop" ? loop_kind::uvloop
                                                                                      : loop_kind::asyncio;
    });
    errors.check([&] {
        const auto capacity = section.integer("ring_capacity", 1024, 2, std::int64_t{1} << 20);
        if ((capacity & (capacity - 1)) != 0)
            section.fail("ring_capacity", "expected a power of two, found " + std::to_string(capacity));
        o.ring_capacity = static_cast<std::size_t>(capacity);
    });
    errors.throw_if_any();
    return o;
}

void check_loop_kind(const config_node& section, const asyncio_options& options, const std::string& venv) {
    if (options.loop != loop_kind::uvloop) return;
    std::string reason;
    {
        python::gil_scope gil;
        python::py_ref mod(PyImport_ImportModule("uvloop"));
        if (mod) return;
        reason = python::last_line(python::take_exception_text());
    }
    section.fail("loop", "uvloop cannot be imported (" + reason + "); install it into " +
                             (venv.empty() ? std::string("the interpreter m0 runs (no python.venv is set)")
                                           : "the app's venv '" + venv + "'") +
                             ", or use loop: asyncio");
}

}  // namespace m0::asyncio
