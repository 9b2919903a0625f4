#pragma once
// One log line per lifecycle hook, "hook <who> <hook> pid=<pid>", so an
// end-to-end test can read the order hooks ran in, per process.
#include <unistd.h>

#include <string>
#include <string_view>

#include <m0/log.hpp>

namespace m0::test {

inline void log_hook(std::string_view who, std::string_view hook, std::string_view extra = {}) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on
    // `"literal" + std::string(...)`.
    std::string line = "hook ";
    line += who;
    line += ' ';
    line += hook;
    line += " pid=";
    line += std::to_string(::getpid());
    if (!extra.empty()) {
        line += ' ';
        line += extra;
    }
    log::info(line);
}

}  // namespace m0::test
