#pragma once
// Where access log lines go: a writer thread that takes whole buffers of
// lines from the reactors and writes them to stderr or a file, so a slow
// disk or a full pipe never blocks a reactor. The file is opened with
// O_APPEND (the processes of a prefork deployment share it) and reopened on
// request (SIGUSR1, after logrotate moved it).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <m0/api.hpp>

namespace m0::telemetry {

class M0_INTERNAL_API access_log_sink {
public:
    // `path` empty: stderr. Throws std::runtime_error if the file cannot be
    // opened. Starts the writer thread.
    explicit access_log_sink(std::string path);
    ~access_log_sink();  // writes what is queued, then stops
    access_log_sink(const access_log_sink&) = delete;
    access_log_sink& operator=(const access_log_sink&) = delete;

    // Any thread. Takes a buffer of whole lines. Beyond max_queued bytes
    // waiting, the buffer is dropped and counted (a stuck disk must not grow
    // memory without bound).
    void submit(std::string&& lines);
    // Any thread: the writer reopens the file before its next write.
    void reopen();
    std::uint64_t dropped_lines() const;

    static constexpr std::size_t max_queued = 16 * 1024 * 1024;

private:
    void run();
    void open_file();  // writer thread (and constructor)

    const std::string path_;
    int fd_ = -1;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::string> queue_;
    std::size_t queued_bytes_ = 0;
    std::uint64_t dropped_ = 0;
    bool reopen_ = false;
    bool stop_ = false;
    std::thread writer_;
};

}  // namespace m0::telemetry
