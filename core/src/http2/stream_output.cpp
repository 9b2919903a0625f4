#include "http2/stream_output.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace m0::http2 {

void stream_output::push(std::string&& bytes) {
    if (bytes.empty()) return;
    pending_ += bytes.size();
    piece p;
    p.left = bytes.size();
    p.bytes = std::move(bytes);
    pieces_.push_back(std::move(p));
}

void stream_output::push_shared(std::shared_ptr<const std::string> bytes) {
    if (!bytes || bytes->empty()) return;
    pending_ += bytes->size();
    piece p;
    p.left = bytes->size();
    p.shared = std::move(bytes);
    pieces_.push_back(std::move(p));
}

void stream_output::push_file(int fd, std::uint64_t offset, std::uint64_t length) {
    if (length == 0) {
        ::close(fd);
        return;
    }
    pending_ += length;
    piece p;
    p.fd = fd;
    p.offset = offset;
    p.left = length;
    pieces_.push_back(std::move(p));
}

long stream_output::copy_into(std::uint8_t* to, std::size_t cap) {
    std::size_t done = 0;
    while (done < cap && !pieces_.empty()) {
        piece& p = pieces_.front();
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(p.left, cap - done));
        std::size_t got = want;
        if (p.fd >= 0) {
            const ssize_t n = ::pread(p.fd, to + done, want, static_cast<off_t>(p.offset));
            if (n < 0 && errno == EINTR) continue;
            // A file that shrank under us cannot fill the length announced.
            if (n <= 0) {
                if (n == 0) errno = EIO;
                return -1;
            }
            got = static_cast<std::size_t>(n);
        } else {
            const std::string& s = p.shared ? *p.shared : p.bytes;
            std::memcpy(to + done, s.data() + p.offset, want);
        }
        done += got;
        p.offset += got;
        p.left -= got;
        pending_ -= got;
        if (p.left == 0) {
            if (p.fd >= 0) ::close(p.fd);
            pieces_.pop_front();
        }
    }
    return static_cast<long>(done);
}

void stream_output::clear() noexcept {
    for (auto& p : pieces_)
        if (p.fd >= 0) ::close(p.fd);
    pieces_.clear();
    pending_ = 0;
}

}  // namespace m0::http2
