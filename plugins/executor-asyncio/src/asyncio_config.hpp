#pragma once
// Validation of `executor.asyncio`.
#include <m0/config.hpp>

#include "asyncio_options.hpp"

namespace m0::asyncio {

// Throws m0::config_error naming the offending key. Does not check that
// uvloop can be imported (that needs the interpreter): see check_loop_kind.
asyncio_options read_asyncio_options(const config_node& section);

// With the interpreter running: uvloop asked for but not importable → a
// config_error at `loop` naming the venv to install it into.
void check_loop_kind(const config_node& section, const asyncio_options& options, const std::string& venv);

}  // namespace m0::asyncio
