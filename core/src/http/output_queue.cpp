#include "http/output_queue.hpp"

#include <cerrno>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace m0::http::detail {

namespace {
// Bodies up to this size are copied next to their head: one contiguous
// buffer is cheaper than an extra iovec for small payloads.
constexpr std::size_t copy_threshold = 4096;
// A coalescing buffer bigger than this is not kept between responses.
constexpr std::size_t max_spare_capacity = 64 * 1024;
constexpr int max_iov = 16;
// flush(sink&) gathers up to one TLS record's worth of plaintext per call.
constexpr std::size_t gather_size = 16 * 1024;
// Per sendfile call; the socket buffer limits it far earlier in practice.
constexpr std::uint64_t max_sendfile_chunk = 1u << 30;
}  // namespace

std::string& output_queue::tail() {
    if (segments_.size() > first_ && segments_.back().appendable) return segments_.back().bytes;
    segment s;
    s.bytes = std::move(spare_);
    s.bytes.clear();
    s.appendable = true;
    segments_.push_back(std::move(s));
    return segments_.back().bytes;
}

void output_queue::append(std::string_view bytes) {
    if (bytes.empty()) return;
    tail().append(bytes);
    pending_ += bytes.size();
}

void output_queue::push(std::string&& bytes) {
    if (bytes.size() <= copy_threshold) {
        append(bytes);
        return;
    }
    pending_ += bytes.size();
    segment s;
    s.bytes = std::move(bytes);
    segments_.push_back(std::move(s));
}

void output_queue::push_shared(std::shared_ptr<const std::string> bytes) {
    if (!bytes || bytes->empty()) return;
    pending_ += bytes->size();
    segment s;
    s.shared = std::move(bytes);
    segments_.push_back(std::move(s));
}

void output_queue::push_file(int fd, std::uint64_t offset, std::uint64_t length) {
    segment s;
    s.fd = fd;
    s.file_offset = offset;
    s.file_left = length;
    pending_ += length;
    segments_.push_back(std::move(s));
}

output_queue::result output_queue::flush(int sock, int& error) {
    while (first_ < segments_.size()) {
        segment& s = segments_[first_];
        result r = s.fd >= 0 ? flush_file(sock, s, error) : flush_bytes(sock, error);
        if (r != result::done) return r;
    }
    recycle();
    return result::done;
}

output_queue::result output_queue::flush_file(int sock, segment& s, int& error) {
    while (s.file_left > 0) {
        off_t off = static_cast<off_t>(s.file_offset);
        const ssize_t n = ::sendfile(sock, s.fd, &off, std::min(s.file_left, max_sendfile_chunk));
        if (n > 0) {
            s.file_offset += static_cast<std::uint64_t>(n);
            s.file_left -= static_cast<std::uint64_t>(n);
            pending_ -= static_cast<std::uint64_t>(n);
            continue;
        }
        if (n == 0) {
            // The file is shorter than the range promised to the client.
            error = EIO;
            return result::failed;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return result::would_block;
        error = errno;
        return result::failed;
    }
    ::close(s.fd);
    s.fd = -1;
    ++first_;
    return result::done;
}

output_queue::result output_queue::flush_bytes(int sock, int& error) {
    iovec iov[max_iov];
    int count = 0;
    std::size_t total = 0;
    for (std::size_t i = first_; i < segments_.size() && count < max_iov && segments_[i].fd < 0; ++i) {
        segment& s = segments_[i];
        if (s.offset == s.size()) continue;
        iov[count].iov_base = const_cast<char*>(s.data()) + s.offset;
        iov[count].iov_len = s.size() - s.offset;
        total += iov[count].iov_len;
        ++count;
    }
    bool short_write = false;
    std::size_t written = 0;
    if (count > 0) {
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<std::size_t>(count);
        ssize_t n;
        do {
            // MSG_NOSIGNAL: a client that hung up must not raise SIGPIPE.
            n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return result::would_block;
            error = errno;
            return result::failed;
        }
        short_write = static_cast<std::size_t>(n) < total;
        written = static_cast<std::size_t>(n);
    }
    consume(written);  // also steps over empty segments
    // A short write means the socket buffer is full.
    return short_write ? result::would_block : result::done;
}

void output_queue::consume(std::size_t n) noexcept {
    pending_ -= n;
    for (std::size_t i = first_; i < segments_.size() && segments_[i].fd < 0 && n > 0; ++i) {
        segment& s = segments_[i];
        const std::size_t take = std::min(n, s.size() - s.offset);
        s.offset += take;
        n -= take;
    }
    // Skip what is now fully written; stop at a partial segment.
    while (first_ < segments_.size() && segments_[first_].fd < 0 &&
           segments_[first_].offset == segments_[first_].size()) {
        segment& s = segments_[first_];
        s.shared.reset();
        if (s.appendable && s.bytes.capacity() <= max_spare_capacity && s.bytes.capacity() > spare_.capacity())
            spare_ = std::move(s.bytes);
        ++first_;
    }
}

output_queue::result output_queue::flush(sink& to, int& error) {
    while (first_ < segments_.size()) {
        segment& s = segments_[first_];
        result r = s.fd >= 0 ? flush_file_through(to, s, error) : flush_bytes_through(to, error);
        if (r != result::done) return r;
    }
    recycle();
    return result::done;
}

output_queue::result output_queue::flush_bytes_through(sink& to, int& error) {
    const segment& head = segments_[first_];
    const char* data = head.data() + head.offset;
    std::size_t len = head.size() - head.offset;
    if (len < gather_size) {
        // A head and a small body, or a few small chunks: one record, one
        // send. Gathered again the same way after a would_block (the queue
        // only grows at its end), so the retry starts with the same bytes.
        if (!gather_) gather_.reset(new char[gather_size]);
        len = 0;
        for (std::size_t i = first_; i < segments_.size() && segments_[i].fd < 0 && len < gather_size; ++i) {
            const segment& s = segments_[i];
            const std::size_t take = std::min(gather_size - len, s.size() - s.offset);
            std::memcpy(gather_.get() + len, s.data() + s.offset, take);
            len += take;
        }
        data = gather_.get();
    }
    std::size_t written = 0;
    const result r = to.write(data, len, written, error);
    if (r == result::failed) return r;
    consume(written);
    return r;
}

output_queue::result output_queue::flush_file_through(sink& to, segment& s, int& error) {
    if (!gather_) gather_.reset(new char[gather_size]);
    while (s.file_left > 0) {
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(s.file_left, gather_size));
        const ssize_t got = ::pread(s.fd, gather_.get(), want, static_cast<off_t>(s.file_offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            // got == 0: the file is shorter than the range promised to the client.
            error = got < 0 ? errno : EIO;
            return result::failed;
        }
        std::size_t written = 0;
        const result r = to.write(gather_.get(), static_cast<std::size_t>(got), written, error);
        if (r == result::failed) return r;
        s.file_offset += written;
        s.file_left -= written;
        pending_ -= written;
        if (r == result::would_block) return r;
    }
    ::close(s.fd);
    s.fd = -1;
    ++first_;
    return result::done;
}

void output_queue::recycle() noexcept {
    segments_.clear();
    first_ = 0;
    pending_ = 0;
}

void output_queue::clear() noexcept {
    for (std::size_t i = first_; i < segments_.size(); ++i)
        if (segments_[i].fd >= 0) ::close(segments_[i].fd);
    recycle();
}

}  // namespace m0::http::detail
