#pragma once
// Dmitry Vyukov's bounded MPMC queue over one allocation.
//
// Each cell carries a sequence word that says whose turn it is: a producer
// may fill cell i when seq == i, a consumer may take it when seq == i + 1.
// Producers contend only on enqueue_pos_, consumers only on dequeue_pos_, and
// a cell is published by its own sequence store, so there is no lock that a
// preempted or parked thread could hold.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>

namespace m0::rings {

inline constexpr std::size_t cache_line = 64;

template <class T>
class vyukov_ring {
    static_assert(std::is_trivially_copyable_v<T>, "cells are copied without locks");

public:
    // capacity: a power of two, >= 2.
    explicit vyukov_ring(std::size_t capacity)
        : mask_(capacity - 1), cells_(std::make_unique<cell[]>(capacity)) {
        if (capacity < 2 || (capacity & (capacity - 1)) != 0)
            throw std::invalid_argument("ring capacity must be a power of two >= 2");
        for (std::size_t i = 0; i < capacity; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
    }
    vyukov_ring(const vyukov_ring&) = delete;
    vyukov_ring& operator=(const vyukov_ring&) = delete;

    std::size_t capacity() const noexcept { return mask_ + 1; }

    // False when the ring is full.
    bool try_push(const T& value) noexcept {
        std::size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
        for (;;) {
            cell& c = cells_[pos & mask_];
            const std::size_t seq = c.seq.load(std::memory_order_acquire);
            const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos);
            if (diff == 0) {
                if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    c.value = value;
                    c.seq.store(pos + 1, std::memory_order_release);
                    return true;
                }
            } else if (diff < 0) {
                return false;  // the consumer has not freed this cell yet: full
            } else {
                pos = enqueue_pos_.load(std::memory_order_relaxed);
            }
        }
    }

    // False when the ring is empty (or its head cell is not published yet).
    bool try_pop(T& out) noexcept {
        std::size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
        for (;;) {
            cell& c = cells_[pos & mask_];
            const std::size_t seq = c.seq.load(std::memory_order_acquire);
            const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos + 1);
            if (diff == 0) {
                if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    out = c.value;
                    c.seq.store(pos + mask_ + 1, std::memory_order_release);
                    return true;
                }
            } else if (diff < 0) {
                return false;
            } else {
                pos = dequeue_pos_.load(std::memory_order_relaxed);
            }
        }
    }

    // Tickets handed out so far; a hint for "is work waiting", never exact
    // under concurrency.
    std::size_t approx_size() const noexcept {
        const std::size_t e = enqueue_pos_.load(std::memory_order_relaxed);
        const std::size_t d = dequeue_pos_.load(std::memory_order_relaxed);
        return e > d ? e - d : 0;
    }

private:
    struct alignas(cache_line) cell {
        std::atomic<std::size_t> seq{0};
        T value{};
    };

    const std::size_t mask_;
    std::unique_ptr<cell[]> cells_;
    alignas(cache_line) std::atomic<std::size_t> enqueue_pos_{0};
    alignas(cache_line) std::atomic<std::size_t> dequeue_pos_{0};
};

}  // namespace m0::rings
