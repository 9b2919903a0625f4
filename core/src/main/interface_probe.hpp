#pragma once
// `m0 --app module:attr --interface auto`: is the callable ASGI or WSGI?
#include <string>

namespace m0 {

// "asgi" when the callable is a coroutine function or an object whose
// __call__ is one, else "wsgi". Decided by importing `spec` in a child
// Python (the app's venv: `venv` (--venv), else $VIRTUAL_ENV, else the
// `python`, or the embedded CPython's executable when that is empty) from `dir` (--chdir; empty: the current
// directory), before any plugin loads; if the probe cannot import it,
// "wsgi" (the frontend then reports the import error).
std::string probe_interface(const std::string& spec, const std::string& venv = {}, const std::string& dir = {},
                            const std::string& python = {});

}  // namespace m0
