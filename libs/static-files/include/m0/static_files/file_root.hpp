#pragma once
// A directory that static files are served from, and the one way to open a
// file under it without escaping it.
#include <string>
#include <string_view>

namespace m0::static_files {

class file_root {
public:
    // Opens `directory` (already absolute). Throws std::system_error if it
    // cannot be opened as a directory.
    explicit file_root(const std::string& directory);
    ~file_root();
    file_root(const file_root&) = delete;
    file_root& operator=(const file_root&) = delete;

    // Opens `relative` ("a/b.txt", "" for the root itself) read-only and
    // non-blocking (a FIFO planted in the root must not stall the reactor).
    // The kernel resolves it strictly beneath the root (openat2 with
    // RESOLVE_BENEATH): "..", absolute paths and symlinks that lead outside
    // fail. Returns the fd, or -errno (-EXDEV for an escape).
    int open(std::string_view relative) const noexcept;

    const std::string& path() const noexcept { return real_path_; }

private:
    int open_checked_by_realpath(const std::string& relative) const noexcept;

    int dir_fd_ = -1;
    std::string real_path_;    // canonical, no trailing slash
    bool use_openat2_ = true;  // false where the kernel (or a seccomp filter) lacks it
};

}  // namespace m0::static_files
