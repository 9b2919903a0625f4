// The per-thread cache of response buffers.
#include "response_buffers.hpp"

#include <utility>

namespace m0::wsgi {

namespace {

// As many as there can be requests in flight on one reactor in the common
// case (a job per connection); beyond it buffers are freed as usual.
constexpr std::size_t max_cached = 1024;
// Headers or body capacity beyond these is not kept: one large response
// must not pin its memory for every later one.
constexpr std::size_t max_kept_headers = 32;
constexpr std::size_t max_kept_header_bytes = 8192;
constexpr std::size_t max_kept_body = response_buffers::lent_body_max;

// Set when the thread's cache is destroyed (thread exit): a job destroyed
// after that, by a later thread-local's or a static destructor, frees its
// buffers instead of touching the dead cache. A bool has no destructor, so
// it can still be read then.
thread_local bool cache_gone = false;

struct thread_cache {
    std::vector<response_buffers> items;
    ~thread_cache() { cache_gone = true; }
};
thread_local thread_cache cache;

}  // namespace

response_buffers response_buffers::take() {
    if (cache_gone || cache.items.empty()) return {};
    response_buffers b = std::move(cache.items.back());
    cache.items.pop_back();
    return b;
}

void response_buffers::give_back(response_buffers&& b) noexcept {
    if (cache_gone || cache.items.size() >= max_cached || b.spare_headers.capacity() > max_kept_headers ||
        b.body.capacity() > max_kept_body)
        return;
    std::size_t header_bytes = 0;
    for (const auto& h : b.spare_headers) header_bytes += h.name.capacity() + h.value.capacity();
    if (header_bytes > max_kept_header_bytes) return;
    b.body.clear();
    try {
        cache.items.push_back(std::move(b));
    } catch (...) {
        // Out of memory growing the cache: the buffers are simply freed.
    }
}

}  // namespace m0::wsgi
