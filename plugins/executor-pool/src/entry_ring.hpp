#pragma once
// The ring a lane uses for jobs and for completions, chosen by
// `executor.pool.ring`. A virtual call per operation keeps the lane code
// identical for every kind; the cost (~1 ns) is far below a hand-off.
#include <boost/lockfree/queue.hpp>

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include <m0/rings/vyukov_ring.hpp>

#include "pool_options.hpp"

namespace m0::pool {

template <class T>
class entry_ring {
public:
    virtual ~entry_ring() = default;
    virtual bool try_push(const T& value) noexcept = 0;
    virtual bool try_pop(T& out) noexcept = 0;
    // A hint that work is waiting (for chained wakes and the age check).
    virtual bool maybe_nonempty() const noexcept = 0;
};

template <class T>
class vyukov_entry_ring final : public entry_ring<T> {
public:
    explicit vyukov_entry_ring(std::size_t capacity) : ring_(capacity) {}
    bool try_push(const T& value) noexcept override { return ring_.try_push(value); }
    bool try_pop(T& out) noexcept override { return ring_.try_pop(out); }
    bool maybe_nonempty() const noexcept override { return ring_.approx_size() != 0; }

private:
    rings::vyukov_ring<T> ring_;
};

// boost::lockfree::queue with a fixed node pool: bounded_push fails instead
// of allocating, so it is bounded like the Vyukov ring.
template <class T>
class lockfree_entry_ring final : public entry_ring<T> {
public:
    explicit lockfree_entry_ring(std::size_t capacity) : queue_(capacity) {}
    bool try_push(const T& value) noexcept override { return queue_.bounded_push(value); }
    bool try_pop(T& out) noexcept override { return queue_.pop(out); }
    bool maybe_nonempty() const noexcept override { return !queue_.empty(); }

private:
    boost::lockfree::queue<T> queue_;
};

// The control arm (`ring: none`): a mutex-protected queue. Never full; the
// pool pairs every push with a kernel wake.
template <class T>
class locked_entry_ring final : public entry_ring<T> {
public:
    bool try_push(const T& value) noexcept override {
        std::lock_guard lock(mutex_);
        items_.push_back(value);
        return true;
    }
    bool try_pop(T& out) noexcept override {
        std::lock_guard lock(mutex_);
        if (items_.empty()) return false;
        out = items_.front();
        items_.pop_front();
        return true;
    }
    bool maybe_nonempty() const noexcept override {
        std::lock_guard lock(mutex_);
        return !items_.empty();
    }

private:
    mutable std::mutex mutex_;
    std::deque<T> items_;
};

template <class T>
std::unique_ptr<entry_ring<T>> make_entry_ring(ring_kind kind, std::size_t capacity) {
    switch (kind) {
    case ring_kind::vyukov: return std::make_unique<vyukov_entry_ring<T>>(capacity);
    case ring_kind::lockfree: return std::make_unique<lockfree_entry_ring<T>>(capacity);
    case ring_kind::none: break;
    }
    return std::make_unique<locked_entry_ring<T>>();
}

}  // namespace m0::pool
