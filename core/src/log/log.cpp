#include <m0/log.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace m0::log {
namespace {

std::atomic<int> current_level{static_cast<int>(level::info)};

const char* level_name(level l) {
    switch (l) {
        case level::debug: return "debug";
        case level::info: return "info";
        case level::warning: return "warning";
        case level::error: return "error";
    }
    return "?";
}

}  // namespace

void set_level(level l) { current_level.store(static_cast<int>(l), std::memory_order_relaxed); }

bool enabled(level l) { return static_cast<int>(l) >= current_level.load(std::memory_order_relaxed); }

void write(level l, std::string_view message) {
    if (!enabled(l)) return;
    using namespace std::chrono;
    auto now = system_clock::now();
    std::time_t secs = system_clock::to_time_t(now);
    auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
    // The pid tells the processes of a prefork deployment apart.
    char source[32];
    std::snprintf(source, sizeof source, " m0[%d] ", static_cast<int>(::getpid()));
    std::string line;
    line.reserve(message.size() + 64);
    line.append(stamp).append(source).append(level_name(l)).append(": ").append(message);
    if (line.empty() || line.back() != '\n') line.push_back('\n');
    // One write(2) per line so lines from different threads never interleave.
    (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace m0::log
