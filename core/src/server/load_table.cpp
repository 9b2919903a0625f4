#include "server/load_table.hpp"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace m0 {

load_table::load_table(unsigned processes, unsigned reactors) : processes_(processes), reactors_(reactors) {
    size_ = sizeof(reactor_load) * processes_ * reactors_;
    // Shared and anonymous: inherited by every forked serving process.
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("cannot map the load table: ") + std::strerror(errno));
    entries_ = static_cast<reactor_load*>(p);
    for (std::size_t i = 0; i < std::size_t{processes_} * reactors_; ++i) new (&entries_[i]) reactor_load();
    for (std::size_t i = 0; i < std::size_t{processes_} * reactors_; ++i) {
        const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            close_wake_fds();
            ::munmap(entries_, size_);
            throw std::runtime_error(std::string("cannot make the load table's wake descriptors: ") + std::strerror(err));
        }
        entries_[i].wake_fd = fd;
    }
}

load_table::~load_table() {
    close_wake_fds();
    ::munmap(entries_, size_);
}

void load_table::close_wake_fds() noexcept {
    for (std::size_t i = 0; i < std::size_t{processes_} * reactors_; ++i) {
        if (entries_[i].wake_fd >= 0) ::close(entries_[i].wake_fd);
        entries_[i].wake_fd = -1;
    }
}

deployment_load load_table::for_process(unsigned row) const noexcept {
    if (row >= processes_) return {};
    deployment_load view{entries_, processes_, reactors_, row};
    const auto self = static_cast<std::int32_t>(::getpid());
    for (unsigned r = 0; r < reactors_; ++r) {
        view.entry(row, r)->owner.store(self);
        view.entry(row, r)->live.store(reactor_load::absent);
        view.entry(row, r)->waiting.store(false);
    }
    return view;
}

}  // namespace m0
