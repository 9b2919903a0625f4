#include "http/mount_router.hpp"

#include <algorithm>
#include <stdexcept>

namespace m0::http {

bool path_under_prefix(std::string_view path, std::string_view prefix) noexcept {
    if (prefix.empty()) return true;
    return path.substr(0, prefix.size()) == prefix && (path.size() == prefix.size() || path[prefix.size()] == '/');
}

mount_router::mount_router(std::vector<std::string> prefixes) {
    for (auto& p : prefixes) mounts_.push_back(std::make_unique<mount>(std::move(p)));
    for (std::size_t i = 0; i < mounts_.size(); ++i) by_length_.push_back(i);
    std::stable_sort(by_length_.begin(), by_length_.end(), [this](std::size_t a, std::size_t b) {
        return mounts_[a]->prefix.size() > mounts_[b]->prefix.size();
    });
}

void mount_router::mount::bind(handler& h) {
    if (target)
        throw std::logic_error("the frontend mounted at '" + (prefix.empty() ? std::string("/") : prefix) +
                               "' called http::serve twice on one worker");
    target = &h;
}

std::optional<std::size_t> mount_router::find(std::string_view path) const noexcept {
    // Longest first, so the first prefix the path lies under is the longest.
    for (std::size_t i : by_length_)
        if (path_under_prefix(path, mounts_[i]->prefix)) return i;
    return std::nullopt;
}

void mount_router::on_request(exchange_ptr ex) {
    const auto found = find(ex->req().path);
    if (!found) {
        ex->respond(404, {{"Content-Type", "text/plain; charset=utf-8"}}, "Not Found\n");
        return;
    }
    mount& m = *mounts_[*found];
    // The engine owns the request as a mutable object and hands it out
    // read-only; the core's router is the one writer of script_name.
    const_cast<request&>(ex->req()).script_name = m.prefix;
    m.target->on_request(std::move(ex));
}

bool mount_router::stream_body(const request& req) {
    const auto found = find(req.path);
    return found && mounts_[*found]->target->stream_body(req);
}

}  // namespace m0::http
