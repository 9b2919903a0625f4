#include "telemetry/access_log_sink.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <m0/log.hpp>

#include "telemetry/signal_free_thread.hpp"

namespace m0::telemetry {

access_log_sink::access_log_sink(std::string path) : path_(std::move(path)) {
    if (path_.empty()) {
        fd_ = STDERR_FILENO;
    } else {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0)
            throw std::runtime_error("cannot open access log '" + path_ + "': " + std::strerror(errno));
    }
    writer_ = start_signal_free_thread([this] { run(); });
}

access_log_sink::~access_log_sink() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    writer_.join();
    if (fd_ > STDERR_FILENO) ::close(fd_);
}

void access_log_sink::submit(std::string&& lines) {
    if (lines.empty()) return;
    {
        std::lock_guard lock(mutex_);
        if (queued_bytes_ + lines.size() > max_queued) {
            dropped_ += static_cast<std::uint64_t>(std::count(lines.begin(), lines.end(), '\n'));
            return;
        }
        queued_bytes_ += lines.size();
        queue_.push_back(std::move(lines));
    }
    wake_.notify_one();
}

void access_log_sink::reopen() {
    {
        std::lock_guard lock(mutex_);
        reopen_ = true;
    }
    wake_.notify_one();
}

std::uint64_t access_log_sink::dropped_lines() const {
    std::lock_guard lock(mutex_);
    return dropped_;
}

void access_log_sink::open_file() {
    if (path_.empty()) return;
    const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        // Keep writing to the old file rather than lose lines.
        log::error("access log: cannot reopen '" + path_ + "': " + std::strerror(errno) + "; still writing to the old file");
        return;
    }
    ::close(fd_);
    fd_ = fd;
    log::info("access log: reopened " + path_);
}

void access_log_sink::run() {
    pthread_setname_np(pthread_self(), "m0-access-log");
    std::uint64_t reported_drops = 0;
    for (;;) {
        std::deque<std::string> batch;
        bool reopen = false;
        bool stop = false;
        std::uint64_t dropped = 0;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || reopen_ || !queue_.empty(); });
            batch.swap(queue_);
            queued_bytes_ = 0;
            reopen = std::exchange(reopen_, false);
            stop = stop_;
            dropped = dropped_;
        }
        if (reopen) open_file();
        for (const auto& lines : batch) {
            std::size_t done = 0;
            while (done < lines.size()) {
                const ssize_t n = ::write(fd_, lines.data() + done, lines.size() - done);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break;  // nowhere to report a failing log; the rest of this buffer is lost
                done += static_cast<std::size_t>(n);
            }
        }
        if (dropped != reported_drops) {
            log::warning("access log: " + std::to_string(dropped - reported_drops) +
                         " line(s) dropped, the writer fell " + std::to_string(max_queued / (1024 * 1024)) +
                         " MiB behind");
            reported_drops = dropped;
        }
        if (stop) return;
    }
}

}  // namespace m0::telemetry
