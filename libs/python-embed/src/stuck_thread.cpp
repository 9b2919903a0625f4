// Reading a stuck thread from outside it: CPython's own traceback dumper
// (the one faulthandler uses from its watchdog thread, which holds no GIL),
// into a memory file.
#include <m0/python/stuck_thread.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

// Exported by every CPython from 3.8 on (internal/pycore_traceback.h):
// writes the thread's frames to `fd` with no allocation and no GIL.
extern "C" void _Py_DumpTraceback(int fd, PyThreadState* tstate);

namespace m0::python {

std::string stack_of(PyThreadState* tstate) {
    if (!tstate) return {};
    const int fd = ::memfd_create("m0-stack", MFD_CLOEXEC);
    if (fd < 0) return {};
    _Py_DumpTraceback(fd, tstate);
    std::string out;
    if (::lseek(fd, 0, SEEK_SET) == 0) {
        char buf[4096];
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && out.size() < 64 * 1024;)
            out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

std::optional<std::string> with_gil_within(std::chrono::milliseconds wait, std::function<std::string()> fn) {
    struct probe {
        std::mutex mutex;
        std::condition_variable done_cv;
        bool done = false;
        std::string result;
    };
    auto p = std::make_shared<probe>();
    try {
        std::thread([p, fn = std::move(fn)] {
            const PyGILState_STATE st = PyGILState_Ensure();
            std::string result = fn ? fn() : std::string();
            PyGILState_Release(st);
            {
                std::lock_guard lock(p->mutex);
                p->result = std::move(result);
                p->done = true;
            }
            p->done_cv.notify_all();
        }).detach();
    } catch (...) {
        return std::string();  // no thread to try with: do not call the interpreter stuck for it
    }
    std::unique_lock lock(p->mutex);
    if (!p->done_cv.wait_for(lock, wait, [&] { return p->done; })) return std::nullopt;
    return std::move(p->result);
}

bool gil_free_within(std::chrono::milliseconds wait) { return with_gil_within(wait, nullptr).has_value(); }

}  // namespace m0::python
