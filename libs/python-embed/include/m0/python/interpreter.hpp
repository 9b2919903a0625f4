#pragma once
// Starting the one embedded interpreter of the process, and the per-thread
// Python state of the threads that run Python code.
#include <string>
#include <vector>

#include <m0/config.hpp>
#include <m0/executor.hpp>
#include <m0/python/api.hpp>

namespace m0::python {

struct interpreter_settings {
    std::string venv;               // empty: none (VIRTUAL_ENV is read by read_settings)
    std::vector<std::string> path;  // prepended to sys.path, in order
    std::string chdir;              // working directory to switch to first; empty: stay
};

// Validates the top-level `python:` section of `root` (absent is fine) and
// returns the settings; relative paths resolve against the config file's
// directory. `chdir` is left empty: the frontend that owns that key fills it.
M0PY_API interpreter_settings read_settings(const config_node& root);

// A Python plugin's settings: runs `read_section` (which validates the
// plugin's own section) and read_settings(root), and throws the errors of
// both in one config_error, so that one run reports them all.
template <class ReadSection>
interpreter_settings read_settings_with(const config_node& root, ReadSection&& read_section) {
    config_errors errors;
    interpreter_settings settings;
    errors.check(read_section);
    errors.check([&] { settings = read_settings(root); });
    errors.throw_if_any();
    return settings;
}

// The `chdir` key of a Python frontend's section: the directory the app is
// imported from, made absolute (and recorded so, for --check); empty when
// absent. Throws config_error if it is not a directory.
M0PY_API std::string read_chdir(const config_node& section);

// Starts the interpreter once per process (later calls only add path entries
// not yet on sys.path) and returns with the GIL released: every later use of
// Python goes through gil_scope. Throws std::runtime_error with a one-line
// reason if the interpreter cannot start or the venv does not exist.
//
// Hosted (m0 installed as a wheel and run by the user's Python): when the
// interpreter is already initialised, start() skips every embedding step
// (PyConfig, venv, libpython made global) and only sets sys.path and the
// working directory; the caller has released the GIL (Py_BEGIN_ALLOW_THREADS)
// and the rest of m0 takes it exactly as when embedded.
M0PY_API void start(const interpreter_settings& settings);
M0PY_API bool started() noexcept;
// True once start() found the interpreter already running (hosted).
M0PY_API bool hosted() noexcept;

// Give the calling thread a Python thread state of its own, kept for the
// thread's life, so taking the GIL per job costs no allocation. attach is
// idempotent; detach destroys the state (takes the GIL to do so).
M0PY_API void attach_thread();
M0PY_API void detach_thread();

// Hooks for executor::add_thread_hooks that attach/detach each executor
// thread. Extra per-thread setup/teardown can be chained by the caller.
M0PY_API thread_hooks make_thread_hooks();

}  // namespace m0::python
