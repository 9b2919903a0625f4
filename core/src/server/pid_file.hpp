#pragma once
// server.pid_file: the pid of the process to signal (the supervisor under
// server.workers > 1), written once m0 listens and removed when it exits.
#include <string>

#include <m0/api.hpp>

namespace m0 {

class M0_INTERNAL_API pid_file {
public:
    // Writes this process's pid to `path`. Throws std::runtime_error when the
    // file names another live m0 process (a second m0 of the same
    // deployment), or cannot be written. A stale file (its process is gone,
    // or is not m0) is replaced.
    explicit pid_file(std::string path);
    // Removes the file if it still holds this pid.
    ~pid_file();
    pid_file(const pid_file&) = delete;
    pid_file& operator=(const pid_file&) = delete;

private:
    std::string path_;
};

}  // namespace m0
