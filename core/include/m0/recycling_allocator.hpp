#pragma once
// An allocator for objects made once per request (the HTTP engine's exchange
// and its shared_ptr control block, made with allocate_shared; a frontend's
// job, through `recycled`): freed blocks wait on a small free list of the
// freeing thread and the next allocation of the same type on that thread
// takes one back, so a reactor serving keep-alive requests stops calling
// malloc for them. A block freed on another thread goes to that thread's
// list: no lock and no cross-thread traffic, only a block that may be reused
// elsewhere.
#include <cstddef>
#include <new>
#include <type_traits>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A cached block is poisoned past its link, so AddressSanitizer still
// reports a use after free of the object that lived in it.
#define M0_RECYCLED_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define M0_RECYCLED_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define M0_RECYCLED_POISON(p, n) ((void)(p), (void)(n))
#define M0_RECYCLED_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace m0 {

template <class T>
class recycling_allocator {
public:
    using value_type = T;
    // Blocks kept per thread and type; more are returned to the heap.
    static constexpr std::size_t max_cached = 64;

    recycling_allocator() noexcept = default;
    template <class U>
    recycling_allocator(const recycling_allocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        free_list& list = cache_;
        if (n == 1 && list.head) {
            node* block = list.head;
            list.head = block->next;
            --list.count;
            M0_RECYCLED_UNPOISON(block + 1, sizeof(T) - sizeof(node));
            return reinterpret_cast<T*>(block);
        }
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{block_align}));
    }

    void deallocate(T* p, std::size_t n) noexcept {
        free_list& list = cache_;
        if (n == 1 && !list.closed && list.count < max_cached) {
            // The guard is constructed on a thread's first free, so it runs
            // (and empties the list) when that thread exits.
            static thread_local exit_guard guard;
            (void)guard;
            auto* block = reinterpret_cast<node*>(p);
            block->next = list.head;
            M0_RECYCLED_POISON(block + 1, sizeof(T) - sizeof(node));
            list.head = block;
            ++list.count;
            return;
        }
        ::operator delete(p, std::align_val_t{block_align});
    }

    template <class U>
    bool operator==(const recycling_allocator<U>&) const noexcept { return true; }

private:
    template <class>
    friend class recycling_allocator;

    struct node {
        node* next;
    };
    static_assert(sizeof(T) >= sizeof(node), "a block must hold a free-list link");
    static constexpr std::size_t block_align =
        alignof(T) > alignof(std::max_align_t) ? alignof(T) : alignof(std::max_align_t);

    // Constant-initialised, no destructor: usable while the thread's other
    // thread_locals are being destroyed.
    struct free_list {
        node* head = nullptr;
        std::size_t count = 0;
        bool closed = false;  // the thread is exiting: free blocks at once
    };
    struct exit_guard {
        ~exit_guard() {
            free_list& list = cache_;
            list.closed = true;
            while (list.head) {
                node* block = list.head;
                list.head = block->next;
                M0_RECYCLED_UNPOISON(block + 1, sizeof(T) - sizeof(node));
                ::operator delete(static_cast<void*>(block), std::align_val_t{block_align});
            }
            list.count = 0;
        }
    };
    static thread_local free_list cache_;
};

template <class T>
thread_local typename recycling_allocator<T>::free_list recycling_allocator<T>::cache_;

// Class-specific operator new and delete through recycling_allocator<T>, for
// a final class T made and destroyed once per request on a reactor (a WSGI
// call: made when the request is dispatched, deleted after its completion):
// `class T final : public base, public recycled<T>`. Deleting T through a
// base with a virtual destructor reaches them too.
template <class T>
struct recycled {
    static void* operator new(std::size_t n) {
        static_assert(std::is_final_v<T>, "a derived class would have another size");
        (void)n;  // sizeof(T): T is final
        return recycling_allocator<T>().allocate(1);
    }
    static void operator delete(void* p) noexcept { recycling_allocator<T>().deallocate(static_cast<T*>(p), 1); }
};

}  // namespace m0
