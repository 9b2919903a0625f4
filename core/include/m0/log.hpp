#pragma once
// Logging: one line per event on stderr, safe from any thread.
#include <string_view>

#include <m0/api.hpp>

namespace m0::log {

enum class level { debug = 0, info = 1, warning = 2, error = 3 };

M0_API void set_level(level l);
M0_API bool enabled(level l);
M0_API void write(level l, std::string_view message);

inline void debug(std::string_view m) { if (enabled(level::debug)) write(level::debug, m); }
inline void info(std::string_view m) { write(level::info, m); }
inline void warning(std::string_view m) { write(level::warning, m); }
inline void error(std::string_view m) { write(level::error, m); }

}  // namespace m0::log
