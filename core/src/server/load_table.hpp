#pragma once
// The deployment_load table of a prefork deployment (m0/scheduler.hpp): one
// reactor_load entry per reactor of every serving process, in an anonymous
// shared mapping made before the first fork, so that every serving process
// reads its siblings' entries without asking anyone; and each entry's wake
// eventfd, inherited by every serving process at the same number.
#include <cstddef>

#include <m0/api.hpp>
#include <m0/scheduler.hpp>

namespace m0 {

class M0_INTERNAL_API load_table {
public:
    load_table(unsigned processes, unsigned reactors);
    ~load_table();
    load_table(const load_table&) = delete;
    load_table& operator=(const load_table&) = delete;

    // In a serving process: its row, claimed for it (owner) and reset to
    // absent (a process that takes over a slot must not be judged by the
    // entries its predecessor left). No table for a row beyond the table.
    deployment_load for_process(unsigned row) const noexcept;

private:
    void close_wake_fds() noexcept;

    reactor_load* entries_ = nullptr;
    std::size_t size_ = 0;  // bytes mapped
    unsigned processes_;
    unsigned reactors_;
};

}  // namespace m0
