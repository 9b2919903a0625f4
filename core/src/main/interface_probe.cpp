#include "main/interface_probe.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace m0 {

namespace {

// Prints "asgi" or "wsgi". "module:factory(...)" is called, like the
// frontends do, so the object examined is the one that would be served.
constexpr const char* probe_source = R"PY(
import importlib, inspect, os, sys
sys.path.insert(0, os.getcwd())
spec = sys.argv[1]
module, _, attr = spec.partition(":")
attr = attr or "application"
call = None
if "(" in attr:
    attr, _, call = attr.partition("(")
obj = importlib.import_module(module)
for part in attr.split("."):
    obj = getattr(obj, part)
if call is not None:
    obj = eval("obj(" + call, {"obj": obj})
coro = inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(getattr(type(obj), "__call__", None))
print("asgi" if coro else "wsgi")
)PY";

std::string python_executable(const std::string& given_venv, const std::string& fallback) {
    const char* venv = given_venv.empty() ? std::getenv("VIRTUAL_ENV") : given_venv.c_str();
    if (venv && *venv) {
        std::filesystem::path p = std::filesystem::path(venv) / "bin" / "python";
        std::error_code ec;
        if (std::filesystem::exists(p, ec)) return p.string();
    }
    return fallback.empty() ? std::string(M0_PROBE_PYTHON) : fallback;
}

}  // namespace

std::string probe_interface(const std::string& spec, const std::string& venv, const std::string& dir,
                            const std::string& python) {
    int out[2];
    if (::pipe(out) != 0) return "wsgi";
    const std::string exe = python_executable(venv, python);
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out[0]);
        ::close(out[1]);
        return "wsgi";
    }
    if (pid == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        ::close(out[0]);
        ::close(out[1]);
        // The import's own errors stay quiet here: the frontend reports them.
        std::freopen("/dev/null", "w", stderr);
        if (!dir.empty() && ::chdir(dir.c_str()) != 0) ::_exit(127);
        ::execl(exe.c_str(), exe.c_str(), "-c", probe_source, spec.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(out[1]);
    std::string text;
    char buf[256];
    for (;;) {
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n > 0) {
            text.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    ::close(out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return text.rfind("asgi", 0) == 0 ? "asgi" : "wsgi";
}

}  // namespace m0
