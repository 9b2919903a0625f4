#pragma once
// The handler a worker serves when a deployment has several mounts: picks
// the mount with the longest prefix matching the request path and hands the
// request to the handler that mount's frontend registered through
// http::serve(). Reactor-thread only, one per worker.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <m0/http.hpp>
#include <m0/reactor.hpp>

namespace m0::http {

// True when `path` lies under `prefix` (canonical: "" or "/a/b"), segment by
// segment: "/api" matches "/api" and "/api/x" but not "/apix"; "" matches
// every path.
M0_INTERNAL_API bool path_under_prefix(std::string_view path, std::string_view prefix) noexcept;

class M0_INTERNAL_API mount_router final : public handler {
public:
    // One prefix per mount, in the deployment's order, each canonical and
    // distinct (normalize_mount_prefix).
    explicit mount_router(std::vector<std::string> prefixes);
    mount_router(const mount_router&) = delete;
    mount_router& operator=(const mount_router&) = delete;

    // Where mount `index`'s frontend registers its handler (reactor_context::mount).
    mount_binding& binding(std::size_t index) { return *mounts_.at(index); }
    bool bound(std::size_t index) const { return mounts_.at(index)->target != nullptr; }

    // The mount serving `path`: the longest prefix that it lies under.
    std::optional<std::size_t> find(std::string_view path) const noexcept;

    // No mount: 404. Otherwise request::script_name is set to the mount's
    // prefix and the mount's handler takes the request.
    void on_request(exchange_ptr ex) override;
    // The mount's handler decides whether its request body streams (no
    // mount: whole, answered 404 anyway).
    bool stream_body(const request& req) override;

private:
    struct mount final : mount_binding {
        explicit mount(std::string p) : prefix(std::move(p)) {}
        void bind(handler& h) override;
        std::string prefix;
        handler* target = nullptr;
    };

    std::vector<std::unique_ptr<mount>> mounts_;  // deployment order
    std::vector<std::size_t> by_length_;  // indexes into mounts_, longest prefix first
};

}  // namespace m0::http
