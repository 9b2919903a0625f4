#include "server/pid_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace m0 {
namespace {

// The pid in the file, or 0 if there is none.
long read_pid(const std::string& path) {
    std::ifstream in(path);
    long pid = 0;
    if (!(in >> pid)) return 0;
    return pid;
}

// Whether `pid` is a live m0 process (its command name is m0 or one of the
// names its processes take, all "m0..."): a reused pid is not mistaken for it.
bool is_live_m0(long pid) {
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) return false;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    return std::getline(comm, name) && name.rfind("m0", 0) == 0;
}

}  // namespace

pid_file::pid_file(std::string path) : path_(std::move(path)) {
    const long held = read_pid(path_);
    if (held != ::getpid() && is_live_m0(held))
        throw std::runtime_error("server.pid_file " + path_ + " names pid " + std::to_string(held) +
                                 ", a running m0: stop it first, or give this one another pid file");
    // Written whole under another name, then renamed: a reader never sees half a pid.
    const std::string tmp = path_ + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write server.pid_file " + path_ + ": " + std::strerror(errno));
    const std::string text = std::to_string(::getpid()) + "\n";
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written || ::rename(tmp.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot write server.pid_file " + path_ + ": " + std::strerror(err));
    }
}

pid_file::~pid_file() {
    if (read_pid(path_) == ::getpid()) ::unlink(path_.c_str());
}

}  // namespace m0
