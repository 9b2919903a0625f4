#pragma once
// A static mount from `frontend.static`: files under a root directory, sent
// with sendfile, with validators (ETag, Last-Modified → 304) and single byte
// ranges (206/416).
#include <string>
#include <string_view>

#include <sys/stat.h>

#include <m0/http.hpp>

#include "file_root.hpp"
#include "frontend_config.hpp"

namespace m0::frontend_http {

class static_files {
public:
    // Opens the root directory; throws std::system_error if it cannot.
    explicit static_files(const static_config& config);

    const std::string& prefix() const noexcept { return prefix_; }
    // The path is under this mount, or is the mount's prefix without its
    // trailing slash (which is redirected to the slash form).
    bool matches(std::string_view path) const noexcept;

    // Reactor thread. Opening and stat-ing happen here, on the reactor: fine
    // for a page cache-warm site, a known cost for a cold disk.
    void serve(const http::exchange_ptr& ex) const;

private:
    void send_file(http::exchange& ex, int fd, const struct stat& st, std::string_view name) const;
    void redirect_to_directory(http::exchange& ex) const;

    std::string prefix_;
    std::string index_;
    file_root root_;
};

}  // namespace m0::frontend_http
