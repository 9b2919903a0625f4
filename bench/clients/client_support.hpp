// What the bench clients share: failing loudly, and their own CPU time (a
// client reports it, so a run can show the client was not the ceiling).
#pragma once

#include <sys/resource.h>

#include <cstdlib>
#include <iostream>
#include <string>

namespace bench {

// Prints "<program>: <what>" to stderr and exits 1: the calling script
// reports it with the arm's name.
[[noreturn]] inline void fail(const char* program, const std::string& what) {
    std::cerr << program << ": " << what << std::endl;
    std::_Exit(1);
}

// User + system CPU seconds this process has used.
inline double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return tv(ru.ru_utime) + tv(ru.ru_stime);
}

}  // namespace bench
