#pragma once
// `--reload` (development): a process beside the supervisor watches the
// app's source and the config file, and on a change sends the supervisor
// SIGHUP, whose reload (server/reload.hpp) checks the new code in a child
// first, then starts new serving processes on the same listening sockets.
// A change that does not import leaves the last good code serving.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace m0 {

struct reload_watch_options {
    std::vector<std::string> dirs;      // watched recursively
    std::vector<std::string> files;     // watched alone (the config file)
    std::vector<std::string> includes;  // file name globs; empty: *.py
    std::vector<std::string> excludes;  // globs on a file's or directory's name or relative path
    bool poll = false;                  // stat every second rather than inotify
    // When this m0 started (ns since the epoch): a file changed since, before
    // the watch began (while the app was imported, or a reload's exec ran),
    // reloads at once. 0: none.
    std::int64_t since_ns = 0;
};

// The directories never watched (besides --reload-exclude): tools' and
// package managers' trees, where nothing is the app's source.
extern const std::vector<std::string> default_reload_excludes;

// Forks the watcher and waits until it watches; returns the fd the
// supervisor keeps (close-on-exec): the watcher exits when it closes (the
// supervisor re-exec'd or stopped).
// Serving processes close it first thing (close_in_child). -1 on failure.
int start_reload_watcher(const reload_watch_options& options);

// What it watches, for the start-up line.
std::string describe_reload_watch(const reload_watch_options& options);

}  // namespace m0
