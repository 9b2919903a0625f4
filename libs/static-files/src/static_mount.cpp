#include <m0/static_files/static_mount.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <m0/static_files/byte_range.hpp>
#include <m0/static_files/cache_validators.hpp>
#include <m0/static_files/http_date.hpp>
#include <m0/static_files/mime_types.hpp>
#include <m0/static_files/request_path.hpp>
#include <m0/static_files/status_response.hpp>

namespace m0::static_files {
namespace {

// Owns an fd until handed to the engine (write_file takes ownership).
class unique_fd {
public:
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    ~unique_fd() { reset(); }
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    int get() const noexcept { return fd_; }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_;
};

std::string content_range(const byte_range& r, std::uint64_t size) {
    return "bytes " + std::to_string(r.first) + "-" + std::to_string(r.last) + "/" + std::to_string(size);
}

}  // namespace

static_mount::static_mount(const static_mount_config& config)
    : prefix_(config.prefix), index_(config.index), root_(config.root) {}

bool static_mount::matches(std::string_view path) const noexcept {
    if (path.substr(0, prefix_.size()) == prefix_) return true;
    return path.size() + 1 == prefix_.size() && path == std::string_view(prefix_).substr(0, path.size());
}

void static_mount::redirect_to_directory(http::exchange& ex) const {
    const auto& req = ex.req();
    std::string location(req.path);
    location.push_back('/');
    if (!req.query.empty()) {
        location.push_back('?');
        location.append(req.query);
    }
    respond_status(ex, 301, {{"Location", std::move(location)}});
}

bool static_mount::serve(const http::exchange_ptr& ex) const {
    if (!matches(ex->req().path)) return false;
    answer(*ex);
    return true;
}

void static_mount::answer(http::exchange& ex) const {
    const auto& req = ex.req();
    if (req.method != "GET" && req.method != "HEAD") {
        respond_status(ex, 405, {{"Allow", "GET, HEAD"}});
        return;
    }
    if (req.path.size() < prefix_.size()) {  // "/static" for the mount "/static/"
        redirect_to_directory(ex);
        return;
    }
    auto rel = make_relative_path(req.path.substr(prefix_.size()));
    if (!rel) {
        respond_status(ex, 404);
        return;
    }
    unique_fd fd(root_.open(rel->path));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
        respond_status(ex, 404);
        return;
    }
    std::string_view name = rel->path;
    if (S_ISDIR(st.st_mode)) {
        if (!rel->trailing_slash) {
            redirect_to_directory(ex);
            return;
        }
        // No directory listings: a directory without its index is not found.
        if (index_.empty()) {
            respond_status(ex, 404);
            return;
        }
        std::string index_path = rel->path.empty() ? index_ : rel->path + "/" + index_;
        fd.reset(root_.open(index_path));
        if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
            respond_status(ex, 404);
            return;
        }
        name = index_;
    }
    // Devices, FIFOs and sockets are never served.
    if (!S_ISREG(st.st_mode)) {
        respond_status(ex, 404);
        return;
    }
    send_file(ex, fd.release(), st, name);
}

void static_mount::send_file(http::exchange& ex, int raw_fd, const struct stat& st, std::string_view name) const {
    unique_fd fd(raw_fd);
    const auto& req = ex.req();
    const bool head = req.method == "HEAD";
    auto etag = make_etag(st);
    auto last_modified = format_http_date(st.st_mtim.tv_sec);

    // RFC 9110 section 13.2.2: If-None-Match takes precedence; If-Modified-Since
    // is only looked at without it.
    bool not_modified = false;
    if (auto inm = req.header("If-None-Match")) {
        not_modified = etag_list_matches(*inm, etag);
    } else if (auto ims = req.header("If-Modified-Since")) {
        auto since = parse_http_date(*ims);
        not_modified = since && st.st_mtim.tv_sec <= *since;
    }
    if (not_modified) {
        ex.respond(304, {{"ETag", std::move(etag)}, {"Last-Modified", std::move(last_modified)}}, {});
        return;
    }

    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::vector<http::response_header> headers{
        {"Content-Type", std::string(mime_type_for(name))},
        {"Last-Modified", std::move(last_modified)},
        {"ETag", etag},
        {"Accept-Ranges", "bytes"},
    };
    unsigned status = 200;
    std::uint64_t offset = 0;
    std::uint64_t length = size;
    if (auto range_header = req.header("Range"); range_header && if_range_allows(req.header("If-Range"), etag, st.st_mtim.tv_sec)) {
        byte_range range;
        switch (parse_byte_range(*range_header, size, range)) {
        case range_outcome::unsatisfiable:
            ex.respond(416, {{"Content-Range", "bytes */" + std::to_string(size)}}, {});
            return;
        case range_outcome::satisfiable:
            status = 206;
            offset = range.first;
            length = range.length();
            headers.push_back({"Content-Range", content_range(range, size)});
            break;
        case range_outcome::ignore:
            break;
        }
    }
    ex.begin(status, std::move(headers), length);
    if (!head && length > 0) ex.write_file(fd.release(), offset, length);
    ex.end();
}

static_mounts::static_mounts(const std::vector<static_mount_config>& configs) {
    mounts_.reserve(configs.size());
    for (const auto& c : configs) mounts_.push_back(std::make_unique<static_mount>(c));
    std::stable_sort(mounts_.begin(), mounts_.end(),
                     [](const auto& a, const auto& b) { return a->prefix().size() > b->prefix().size(); });
}

bool static_mounts::serve(const http::exchange_ptr& ex) const {
    for (const auto& mount : mounts_) {
        if (mount->serve(ex)) return true;
    }
    return false;
}

}  // namespace m0::static_files
