#pragma once
// Files under a URL prefix served on the reactor with sendfile, no Python:
// static assets of a WSGI site (Django's STATIC_URL) without a second process.
#include <string_view>
#include <vector>

#include <m0/http.hpp>

#include "wsgi_settings.hpp"

namespace m0::wsgi {

class static_files {
public:
    explicit static_files(std::vector<static_mount> mounts) : mounts_(std::move(mounts)) {}
    // Answers and returns true when `path` is under one of the prefixes.
    bool try_serve(http::exchange& ex) const;

private:
    std::vector<static_mount> mounts_;
};

}  // namespace m0::wsgi
