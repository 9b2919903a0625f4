#include <m0/static_files/file_root.hpp>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <system_error>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace m0::static_files {
namespace {

constexpr int open_flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

long sys_openat2(int dir_fd, const char* path, std::uint64_t resolve) noexcept {
    open_how how{};
    how.flags = open_flags;
    how.resolve = resolve;
    return ::syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
}

constexpr std::uint64_t beneath = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;

}  // namespace

file_root::file_root(const std::string& directory) {
    char resolved[PATH_MAX];
    if (::realpath(directory.c_str(), resolved) == nullptr)
        throw std::system_error(errno, std::generic_category(), directory);
    real_path_ = resolved;
    dir_fd_ = ::open(real_path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0) throw std::system_error(errno, std::generic_category(), directory);
    long probe = sys_openat2(dir_fd_, ".", beneath);
    if (probe >= 0) {
        ::close(static_cast<int>(probe));
    } else if (errno == ENOSYS || errno == EPERM) {
        use_openat2_ = false;
    }
}

file_root::~file_root() {
    if (dir_fd_ >= 0) ::close(dir_fd_);
}

int file_root::open(std::string_view relative) const noexcept {
    // The path is built once per request; a std::string keeps it NUL-terminated.
    std::string rel = relative.empty() ? std::string(".") : std::string(relative);
    if (rel.find('\0') != std::string::npos) return -ENOENT;
    if (!use_openat2_) return open_checked_by_realpath(rel);
    long fd;
    do {
        fd = sys_openat2(dir_fd_, rel.c_str(), beneath);
    } while (fd < 0 && errno == EAGAIN);  // a concurrent rename raced the lookup
    return fd >= 0 ? static_cast<int>(fd) : -errno;
}

// Fallback for kernels before 5.6: canonicalize, then require the result to
// stay inside the root. Racy against a concurrent symlink swap, which the
// openat2 path is not; documented in the README.
int file_root::open_checked_by_realpath(const std::string& relative) const noexcept {
    std::string joined = real_path_ + "/" + relative;
    char resolved[PATH_MAX];
    if (::realpath(joined.c_str(), resolved) == nullptr) return -errno;
    std::string_view r(resolved);
    bool inside = r == real_path_ ||
                  (r.size() > real_path_.size() && r.compare(0, real_path_.size(), real_path_) == 0 &&
                   (real_path_ == "/" || r[real_path_.size()] == '/'));
    if (!inside) return -EXDEV;
    int fd = ::open(resolved, open_flags | O_NOFOLLOW);
    return fd >= 0 ? fd : -errno;
}

}  // namespace m0::static_files
