#include "server/reload_watch.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <m0/log.hpp>

namespace m0 {

const std::vector<std::string> default_reload_excludes = {".venv", "venv", "node_modules", "__pycache__", ".git",
                                                          ".hg", ".tox", ".mypy_cache", ".pytest_cache"};

namespace {

namespace fs = std::filesystem;

// A save is often several events (an editor writes a temporary file,
// renames it, sets its mode): one reload once the burst is quiet this long.
constexpr int debounce_ms = 150;
// Polling: how often every watched file is looked at.
constexpr int poll_interval_ms = 1000;

class watcher {
public:
    watcher(const reload_watch_options& o, int supervisor_fd) : o_(o), supervisor_fd_(supervisor_fd) {
        if (o_.includes.empty()) o_.includes = {"*.py"};
        for (const auto& e : default_reload_excludes) o_.excludes.push_back(e);
        for (const auto& f : o_.files) {
            std::error_code ec;
            const fs::path p = fs::absolute(f, ec);
            files_[p.parent_path().string()].push_back(p.filename().string());
        }
    }

    // `ready`: written to once the watch is set, so that nothing the
    // supervisor starts afterwards can change a file unseen.
    [[noreturn]] void run(int ready) {
        const bool inotify = !o_.poll && start_inotify();
        if (!inotify)
            log::info("reload: watching by polling every " + std::to_string(poll_interval_ms) + " ms" +
                      (o_.poll ? "" : " (inotify is not available)"));
        snapshot first = take();
        (void)!::write(ready, "1", 1);
        ::close(ready);
        // Not a time still to come (a file from an archive, a clock
        // elsewhere): it would reload at every start.
        const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
        for (const auto& [path, stamp] : first)
            if (o_.since_ns > 0 && stamp.first > o_.since_ns && stamp.first <= now) {
                reload(path);
                break;
            }
        if (inotify) inotify_loop();
        poll_loop(std::move(first));
    }

private:
    bool excluded(const fs::path& p, const fs::path& root) const {
        const std::string name = p.filename().string();
        std::error_code ec;
        const std::string relative = fs::relative(p, root, ec).string();
        for (const auto& e : o_.excludes)
            if (::fnmatch(e.c_str(), name.c_str(), 0) == 0 || (!ec && ::fnmatch(e.c_str(), relative.c_str(), 0) == 0))
                return true;
        return false;
    }

    // A file whose change reloads: one named alone, or an included one
    // under a watched directory.
    bool wanted(const fs::path& dir, const std::string& name, const fs::path& root) const {
        if (auto it = files_.find(dir.string()); it != files_.end())
            for (const auto& f : it->second)
                if (f == name) return true;
        if (root.empty()) return false;
        bool included = false;
        for (const auto& i : o_.includes) included = included || ::fnmatch(i.c_str(), name.c_str(), 0) == 0;
        return included && !excluded(dir / name, root);
    }

    // ---------------------------------------------------------- inotify

    bool start_inotify() {
        fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd_ < 0) return false;
        for (const auto& d : o_.dirs) add_tree(fs::absolute(d), fs::absolute(d));
        for (const auto& [dir, names] : files_)
            if (!watched_dir(dir)) add_watch(dir, {});
        if (exhausted_) {
            log::warning("reload: out of inotify watches (fs.inotify.max_user_watches); watching by polling instead");
            ::close(fd_);
            return false;
        }
        return true;
    }

    bool watched_dir(const std::string& dir) const {
        for (const auto& [wd, w] : watches_)
            if (w.dir == dir) return true;
        return false;
    }

    bool add_watch(const fs::path& dir, const fs::path& root) {
        constexpr uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                                  IN_DELETE_SELF | IN_ONLYDIR;
        const int wd = ::inotify_add_watch(fd_, dir.c_str(), mask);
        if (wd < 0) {
            if (errno == ENOSPC) exhausted_ = true;
            return false;
        }
        watches_[wd] = {dir, root};
        return true;
    }

    // Returns whether some wanted file is in the tree (a new directory's
    // files may have been written before its watch existed).
    bool add_tree(const fs::path& dir, const fs::path& root) {
        if (!add_watch(dir, root)) return false;
        bool found = false;
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            const fs::path p = it->path();
            if (it->is_directory(ec) && !it->is_symlink(ec)) {
                if (!excluded(p, root)) found = add_tree(p, root) || found;
            } else if (wanted(dir, p.filename().string(), root)) {
                found = true;
            }
        }
        return found;
    }

    // Reads what is there; returns the first changed file's path, if any.
    std::optional<std::string> drain_events() {
        alignas(inotify_event) char buf[16384];
        std::optional<std::string> changed;
        for (;;) {
            const ssize_t n = ::read(fd_, buf, sizeof buf);
            if (n <= 0) break;
            for (char* p = buf; p < buf + n;) {
                const auto* e = reinterpret_cast<const inotify_event*>(p);
                p += sizeof(inotify_event) + e->len;
                if (e->mask & IN_Q_OVERFLOW) changed = changed.value_or("(many files: the event queue overflowed)");
                auto it = watches_.find(e->wd);
                if (it == watches_.end()) continue;
                const auto w = it->second;
                if (e->mask & (IN_IGNORED | IN_DELETE_SELF)) {
                    watches_.erase(e->wd);
                    continue;
                }
                if (e->len == 0) continue;
                const std::string name = e->name;
                const fs::path path = w.dir / name;
                if ((e->mask & IN_ISDIR) && (e->mask & (IN_CREATE | IN_MOVED_TO))) {
                    // A new directory (or one moved in): watched from now on.
                    if (!w.root.empty() && !excluded(path, w.root) && add_tree(path, w.root))
                        changed = changed.value_or(path.string());
                    continue;
                }
                if (e->mask & IN_ISDIR) continue;
                if (e->mask & IN_CREATE) continue;  // its IN_CLOSE_WRITE follows
                if (wanted(w.dir, name, w.root)) changed = changed.value_or(path.string());
            }
        }
        return changed;
    }

    [[noreturn]] void inotify_loop() {
        for (;;) {
            pollfd fds[2] = {{fd_, POLLIN, 0}, {supervisor_fd_, POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0 && errno != EINTR) ::_exit(0);
            if (fds[1].revents) ::_exit(0);  // the supervisor is gone or re-exec'd
            if (!(fds[0].revents & POLLIN)) continue;
            auto changed = drain_events();
            if (!changed) continue;
            // The burst's end: quiet for debounce_ms.
            for (;;) {
                pollfd more[2] = {{fd_, POLLIN, 0}, {supervisor_fd_, POLLIN, 0}};
                const int r = ::poll(more, 2, debounce_ms);
                if (r > 0 && more[1].revents) ::_exit(0);
                if (r <= 0) break;
                (void)drain_events();
            }
            if (exhausted_) {
                log::warning("reload: out of inotify watches (fs.inotify.max_user_watches); watching by polling instead");
                ::close(fd_);
                reload(*changed);
                poll_loop(take());
            }
            reload(*changed);
        }
    }

    // ---------------------------------------------------------- polling

    using snapshot = std::map<std::string, std::pair<std::int64_t, std::int64_t>>;  // path → (mtime ns, size)

    void scan(const fs::path& dir, const fs::path& root, snapshot& out) const {
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            const fs::path p = it->path();
            if (it->is_directory(ec) && !it->is_symlink(ec)) {
                if (!excluded(p, root)) scan(p, root, out);
            } else if (wanted(dir, p.filename().string(), root)) {
                record(p, out);
            }
        }
    }

    static void record(const fs::path& p, snapshot& out) {
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0) return;
        out[p.string()] = {static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                           static_cast<std::int64_t>(st.st_size)};
    }

    snapshot take() const {
        snapshot s;
        for (const auto& d : o_.dirs) scan(fs::absolute(d), fs::absolute(d), s);
        for (const auto& [dir, names] : files_)
            for (const auto& n : names) record(fs::path(dir) / n, s);
        return s;
    }

    [[noreturn]] void poll_loop(snapshot last) {
        for (;;) {
            pollfd fds[1] = {{supervisor_fd_, POLLIN, 0}};
            const int r = ::poll(fds, 1, poll_interval_ms);
            if (r > 0) ::_exit(0);
            snapshot now = take();
            if (now == last) continue;
            std::string changed;
            for (const auto& [path, stamp] : now)
                if (auto it = last.find(path); it == last.end() || it->second != stamp) changed = path;
            for (const auto& [path, stamp] : last)
                if (!now.count(path)) changed = path;
            last = std::move(now);
            reload(changed);
        }
    }

    void reload(const std::string& changed) {
        log::info("reload: " + changed + " changed; reloading");
        ::kill(::getppid(), SIGHUP);
    }

    struct watch {
        fs::path dir;
        fs::path root;  // the watched tree's top; empty: a directory watched for a named file
    };

    reload_watch_options o_;
    const int supervisor_fd_;
    std::map<std::string, std::vector<std::string>> files_;  // directory → file names watched alone
    std::map<int, watch> watches_;
    int fd_ = -1;
    bool exhausted_ = false;
};

}  // namespace

int start_reload_watcher(const reload_watch_options& options) {
    int p[2], ready[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return -1;
    if (::pipe2(ready, O_CLOEXEC) != 0) {
        ::close(p[0]);
        ::close(p[1]);
        return -1;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        for (int fd : {p[0], p[1], ready[0], ready[1]}) ::close(fd);
        return -1;
    }
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        ::prctl(PR_SET_NAME, "m0-reload", 0, 0, 0);
        // It holds nothing of the supervisor's (listening sockets, the
        // interpreter's files): only its ends of the pipes, as fds 3 and 4.
        // Moved above every fd first, so that neither lands on the other.
        const int gone = ::fcntl(p[0], F_DUPFD, 1024), done = ::fcntl(ready[1], F_DUPFD, 1024);
        if (gone < 0 || done < 0 || ::dup2(gone, 3) < 0 || ::dup2(done, 4) < 0) ::_exit(1);
        ::close_range(5, ~0U, 0);
        watcher(options, 3).run(4);
    }
    ::close(p[0]);
    ::close(ready[1]);
    // Until the watcher watches (a byte), or is gone (end of file).
    char byte;
    while (::read(ready[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(ready[0]);
    return p[1];
}

std::string describe_reload_watch(const reload_watch_options& options) {
    std::string out;
    for (const auto& d : options.dirs) out += (out.empty() ? "" : ", ") + d;
    out += options.includes.empty() ? " (*.py" : " (";
    for (std::size_t i = 0; i < options.includes.size(); ++i) out += (i ? ", " : "") + options.includes[i];
    out += ")";
    for (const auto& f : options.files) out += " and " + f;
    return out;
}

}  // namespace m0
