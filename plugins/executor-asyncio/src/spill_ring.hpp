#pragma once
// A bounded Vyukov ring that never drops: a push that finds it full goes to a
// locked spill list, and from then on every push does until the consumer has
// taken the ring and the list, so entries keep the order they were pushed in.
// Any number of producers, one consumer at a time.
#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include <m0/rings/vyukov_ring.hpp>

namespace m0::asyncio {

template <class T>
class spill_ring {
public:
    explicit spill_ring(std::size_t capacity) : ring_(capacity) {}

    void push(const T& value) {
        if (!spilling_.load() && ring_.try_push(value)) return;
        std::lock_guard lock(mutex_);
        // Re-checked under the lock: the consumer clears the mode only after
        // taking the list, and then the ring is the right place again.
        if (spilling_.load() || !ring_.try_push(value)) {
            spill_.push_back(value);
            spilling_.store(true);
        }
    }

    // Consumer: calls fn(entry) for each entry in push order; returns how many.
    template <class F>
    std::size_t drain(F&& fn) {
        std::size_t n = 0;
        T value;
        while (ring_.try_pop(value)) {
            fn(value);
            ++n;
        }
        if (!spilling_.load()) return n;
        std::vector<T> batch, spilled;
        {
            std::lock_guard lock(mutex_);
            // Producers now append to the list; what is on the ring was pushed
            // before it. Wait for pushes already under way to publish.
            for (;;) {
                while (ring_.try_pop(value)) batch.push_back(value);
                if (ring_.approx_size() == 0) break;
                std::this_thread::yield();
            }
            spilled.swap(spill_);
            spilling_.store(false);
        }
        for (const auto& v : batch) fn(v);
        for (const auto& v : spilled) fn(v);
        return n + batch.size() + spilled.size();
    }

    // A hint that entries wait (for the reactor's re-check before it blocks).
    bool maybe_nonempty() const noexcept { return ring_.approx_size() != 0 || spilling_.load(); }

private:
    rings::vyukov_ring<T> ring_;
    alignas(rings::cache_line) std::mutex mutex_;
    std::vector<T> spill_;
    std::atomic<bool> spilling_{false};
};

}  // namespace m0::asyncio
