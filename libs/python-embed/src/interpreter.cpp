// Interpreter start-up: venv, sys.path, working directory, and the
// per-thread Python thread states of executor threads.
#include <m0/python/interpreter.hpp>

#include <Python.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include <m0/config.hpp>
#include <m0/log.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/ref.hpp>

namespace m0::python {
namespace fs = std::filesystem;

namespace {

std::mutex start_mutex;
bool is_started = false;
bool is_hosted = false;
std::string started_venv;
thread_local PyThreadState* thread_state = nullptr;

std::string resolve(const std::string& base, const std::string& p) {
    if (p.empty()) return p;
    fs::path path(p);
    if (path.is_relative()) path = fs::path(base) / path;
    return path.lexically_normal().string();
}

// Plugins are loaded RTLD_LOCAL, so libpython arrives in the process with
// its symbols hidden from later dlopens; C extension modules (lib-dynload,
// site-packages) are not linked against libpython and expect them global.
// Nothing to do where they already are: CPython linked into the m0 binary,
// or libpython a dependency of the executable (the unit tests). The handle
// of the main program searches exactly the global scope (RTLD_DEFAULT would
// also search this library's own dependencies, libpython among them).
void make_libpython_global() {
    if (void* global_scope = dlopen(nullptr, RTLD_NOW)) {
        const bool already_global = dlsym(global_scope, "Py_InitializeFromConfig") != nullptr;
        dlclose(global_scope);
        if (already_global) return;
    }
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) && info.dli_fname) {
        if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
            log::warning(std::string("python: cannot make libpython global: ") + dlerror());
    }
}

void check_status(PyStatus status, PyConfig& config, const char* what) {
    if (PyStatus_Exception(status)) {
        std::string msg = std::string("python: ") + what + ": " +
                          (status.err_msg ? status.err_msg : "failed");
        PyConfig_Clear(&config);
        throw std::runtime_error(msg);
    }
}

void initialize(const interpreter_settings& s) {
    make_libpython_global();
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    // m0 owns the process: its signals, its argv, its stdio.
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    config.buffered_stdio = 0;  // the process may end without Py_Finalize
    // getpath finds pyvenv.cfg next to the executable and site.py then adds
    // the venv's site-packages, exactly as `venv/bin/python` would.
    std::string exe = s.venv.empty() ? std::string(M0PY_DEFAULT_EXECUTABLE)
                                     : (fs::path(s.venv) / "bin" / "python").string();
    check_status(PyConfig_SetBytesString(&config, &config.program_name, exe.c_str()), config,
                 "program name");
    check_status(PyConfig_SetBytesString(&config, &config.executable, exe.c_str()), config,
                 "executable");
    check_status(Py_InitializeFromConfig(&config), config, "cannot start the interpreter");
    PyConfig_Clear(&config);
}

// Hosted: python.venv (or $VIRTUAL_ENV) cannot switch the running
// interpreter to another venv; say so when it names one that is not running.
void warn_if_not_running_venv(const std::string& venv) {
    if (venv.empty()) return;
    gil_scope gil;
    PyObject* prefix = PySys_GetObject("prefix");  // borrowed
    const char* text = prefix && PyUnicode_Check(prefix) ? PyUnicode_AsUTF8(prefix) : nullptr;
    if (!text) {
        PyErr_Clear();
        return;
    }
    std::error_code ec;
    if (fs::equivalent(fs::path(venv), fs::path(text), ec)) return;
    log::warning("python: m0 runs hosted in the Python of '" + std::string(text) + "'; ignoring venv '" + venv +
                 "' (install m0 into that venv and run its m0)");
}

// Prepends the entries not yet on sys.path, keeping their order. GIL held.
void prepend_sys_path(const std::vector<std::string>& entries) {
    PyObject* sys_path = PySys_GetObject("path");  // borrowed
    if (!sys_path || !PyList_Check(sys_path)) return;
    Py_ssize_t at = 0;
    for (const auto& e : entries) {
        py_ref item(PyUnicode_DecodeFSDefault(e.c_str()));
        if (!item) {
            log_exception("python: bad sys.path entry");
            continue;
        }
        int found = PySequence_Contains(sys_path, item.get());
        if (found == 0) PyList_Insert(sys_path, at++, item.get());
        if (found < 0) PyErr_Clear();
    }
}

}  // namespace

interpreter_settings read_settings(const config_node& root) {
    interpreter_settings s;
    config_node py = root.child("python");
    if (!py.present()) {
        if (const char* env = std::getenv("VIRTUAL_ENV"); env && *env) s.venv = env;
        return s;
    }
    if (!py.is_map()) py.fail("", "expected a map (venv, path)");
    config_errors errors;
    errors.check([&] { py.allow_keys({"venv", "path"}); });
    const std::string base = py.base_dir();
    errors.check([&] {
        if (auto venv = py.optional_string("venv")) {
            s.venv = resolve(base, *venv);
            py.set_effective("venv", s.venv);  // --check prints a config valid from anywhere
        } else if (const char* env = std::getenv("VIRTUAL_ENV"); env && *env) {
            s.venv = env;
        }
        if (!s.venv.empty() && !fs::exists(fs::path(s.venv) / "pyvenv.cfg"))
            py.fail("venv", "'" + s.venv + "' is not a virtual environment (no pyvenv.cfg)");
    });
    errors.check([&] {
        for (const auto& p : py.string_list("path", {})) s.path.push_back(resolve(base, p));
        if (!s.path.empty()) py.set_effective("path", s.path);  // absolute, as venv above
    });
    errors.throw_if_any();
    return s;
}

std::string read_chdir(const config_node& section) {
    const auto dir = section.optional_string("chdir");
    if (!dir || dir->empty()) return {};
    const std::string path = resolve(section.base_dir(), *dir);
    std::error_code ec;
    if (!fs::is_directory(path, ec)) section.fail("chdir", "'" + path + "' is not a directory");
    section.set_effective("chdir", path);  // --check prints a config valid from anywhere
    return path;
}

void start(const interpreter_settings& s) {
    std::lock_guard lock(start_mutex);
    if (!s.chdir.empty()) {
        std::error_code ec;
        fs::current_path(s.chdir, ec);
        if (ec) throw std::runtime_error("cannot chdir to '" + s.chdir + "': " + ec.message());
    }
    if (!s.venv.empty() && !fs::exists(fs::path(s.venv) / "pyvenv.cfg"))
        throw std::runtime_error("python venv '" + s.venv + "' is not a virtual environment (no pyvenv.cfg)");
    bool first = !is_started;
    if (first && Py_IsInitialized()) {
        // Hosted (the wheel): the user's Python runs, and its venv is the
        // venv; the extension that called m0 released the GIL. Nothing to
        // start: every later use of Python takes the GIL as below.
        is_hosted = true;
        is_started = true;
        started_venv = s.venv;
        warn_if_not_running_venv(s.venv);
    } else if (first) {
        initialize(s);
        is_started = true;
        started_venv = s.venv;
        PyEval_SaveThread();  // the main thread gives the GIL up for good
    } else if (s.venv != started_venv) {
        log::warning("python: the interpreter already runs with venv '" + started_venv +
                     "'; ignoring venv '" + s.venv + "'");
    }
    gil_scope gil;
    // Like `python -m`: the working directory comes first on sys.path, then
    // python.path entries in front of it.
    std::vector<std::string> entries = s.path;
    std::error_code ec;
    entries.push_back(fs::current_path(ec).string());
    prepend_sys_path(entries);
}

bool started() noexcept {
    std::lock_guard lock(start_mutex);
    return is_started;
}

bool hosted() noexcept {
    std::lock_guard lock(start_mutex);
    return is_hosted;
}

void attach_thread() {
    if (thread_state) return;
    PyInterpreterState* interp = PyInterpreterState_Main();
    // Needs no GIL; registers the state as this thread's PyGILState too.
    thread_state = PyThreadState_New(interp);
}

bool take_kept_gil() noexcept;  // gil.cpp

void detach_thread() {
    if (!thread_state) return;
    if (!take_kept_gil()) PyEval_RestoreThread(thread_state);
    PyThreadState_Clear(thread_state);
    PyThreadState_DeleteCurrent();  // also releases the GIL
    thread_state = nullptr;
}

thread_hooks make_thread_hooks() {
    return thread_hooks{[] { attach_thread(); }, [] { detach_thread(); }, [] { release_kept_gil(); }};
}

// Exposed to gil.cpp only.
PyThreadState* current_thread_state() noexcept { return thread_state; }

}  // namespace m0::python
