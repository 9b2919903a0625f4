#pragma once
// The response body of one stream, waiting for the client's flow-control
// window: bytes, shared payloads and file ranges, in order. nghttp2 takes
// them out frame by frame (copy_into); what is queued here is what the
// application sees as pending_bytes().
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace m0::http2 {

class stream_output {
public:
    stream_output() = default;
    stream_output(const stream_output&) = delete;
    stream_output& operator=(const stream_output&) = delete;
    ~stream_output() { clear(); }

    void push(std::string&& bytes);
    void push_shared(std::shared_ptr<const std::string> bytes);
    // Takes ownership of fd (closed once sent or dropped).
    void push_file(int fd, std::uint64_t offset, std::uint64_t length);

    // Moves up to `cap` bytes to `to`; -1 when a file read failed (errno).
    long copy_into(std::uint8_t* to, std::size_t cap);
    std::uint64_t pending() const noexcept { return pending_; }
    bool empty() const noexcept { return pending_ == 0; }
    void clear() noexcept;

private:
    struct piece {
        std::string bytes;
        std::shared_ptr<const std::string> shared;  // used instead of bytes when set
        int fd = -1;                                 // a file range when >= 0
        std::uint64_t offset = 0;                    // into bytes, or into the file
        std::uint64_t left = 0;
    };
    std::deque<piece> pieces_;
    std::uint64_t pending_ = 0;
};

}  // namespace m0::http2
