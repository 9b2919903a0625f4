#pragma once
// Turning the pending Python exception into text for m0's log. GIL held.
#include <string>
#include <string_view>

#include <m0/python/api.hpp>

namespace m0::python {

// Fetches and clears the pending exception; returns the formatted traceback
// ("Traceback (most recent call last): ..."), or "" if none was pending.
M0PY_API std::string take_exception_text();
// The last line of a traceback text ("ValueError: bad"), for one-line reasons.
M0PY_API std::string last_line(std::string_view traceback_text);
// Logs "<what>:\n<traceback>" at error level and clears the exception.
M0PY_API void log_exception(std::string_view what);

}  // namespace m0::python
