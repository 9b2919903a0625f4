#pragma once
// Static mounts: files under a root directory answered at URLs under a
// prefix, on the reactor, sent with sendfile, with validators (ETag,
// Last-Modified → 304) and single byte ranges (206/416). The entry point of
// the m0_static_files library that the http and wsgi frontends share.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

#include <m0/http.hpp>
#include <m0/static_files/file_root.hpp>
#include <m0/static_files/static_config.hpp>

namespace m0::static_files {

class static_mount {
public:
    // Opens the root directory; throws std::system_error if it cannot.
    explicit static_mount(const static_mount_config& config);

    const std::string& prefix() const noexcept { return prefix_; }
    // The path is under this mount, or is the mount's prefix without its
    // trailing slash (which is redirected to the slash form).
    bool matches(std::string_view path) const noexcept;

    // Reactor thread. Answers (GET/HEAD: 200, 206, 304, 416, 301, 404; other
    // methods: 405) and returns true when the request path matches this
    // mount; returns false, answering nothing, otherwise. Opening and
    // stat-ing happen here, on the reactor: fine for a page cache-warm site,
    // a known cost for a cold disk.
    bool serve(const http::exchange_ptr& ex) const;

private:
    void answer(http::exchange& ex) const;
    void send_file(http::exchange& ex, int fd, const struct stat& st, std::string_view name) const;
    void redirect_to_directory(http::exchange& ex) const;

    std::string prefix_;
    std::string index_;
    file_root root_;
};

// Every mount of a frontend, tried longest prefix first. Read-only once
// built, so one set is shared by all workers.
class static_mounts {
public:
    // Opens every root; throws std::system_error if one cannot be opened.
    explicit static_mounts(const std::vector<static_mount_config>& configs);

    bool empty() const noexcept { return mounts_.empty(); }
    // Answers and returns true when some mount matches the request path.
    bool serve(const http::exchange_ptr& ex) const;

private:
    // file_root owns a directory fd and does not move.
    std::vector<std::unique_ptr<static_mount>> mounts_;
};

}  // namespace m0::static_files
