// Reading a stuck thread from outside it: CPython's own traceback dumper
// (the one faulthandler uses from its watchdog thread, which holds no GIL),
// into a memory file.
#include <m0/python/stuck_thread.hpp>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <m0/python/ref.hpp>

namespace m0::python {

namespace {

// CPython's dumper (internal/pycore_traceback.h) writes a thread's frames to
// an fd with no allocation and no GIL. Not every build exports it (3.10's
// and 3.13's shared libpython do not): looked up, not linked.
using dump_traceback_fn = void (*)(int fd, PyThreadState* tstate);

dump_traceback_fn dump_traceback() {
    static const auto fn = reinterpret_cast<dump_traceback_fn>(::dlsym(RTLD_DEFAULT, "_Py_DumpTraceback"));
    return fn;
}

}  // namespace

std::string stack_with_gil(unsigned long thread_ident) {
    std::string out;
    py_ref sys(PyImport_ImportModule("sys"));
    py_ref traceback(sys ? PyImport_ImportModule("traceback") : nullptr);
    py_ref frames(sys ? PyObject_CallMethod(sys.get(), "_current_frames", nullptr) : nullptr);
    py_ref key(PyLong_FromUnsignedLong(thread_ident));
    PyObject* frame = frames && key ? PyDict_GetItemWithError(frames.get(), key.get()) : nullptr;  // borrowed
    py_ref lines(frame && traceback ? PyObject_CallMethod(traceback.get(), "format_stack", "O", frame) : nullptr);
    if (lines && PyList_Check(lines.get())) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines.get()); ++i) {
            Py_ssize_t n = 0;
            const char* s = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(lines.get(), i), &n);
            if (s) out.append(s, static_cast<std::size_t>(n));
        }
    }
    PyErr_Clear();
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

std::string stack_of(PyThreadState* tstate) {
    const auto dump = dump_traceback();
    if (!tstate || !dump) return {};
    const int fd = ::memfd_create("m0-stack", MFD_CLOEXEC);
    if (fd < 0) return {};
    dump(fd, tstate);
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
