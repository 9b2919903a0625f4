#pragma once
// The bytes and file ranges a connection still has to write, in order.
// Small pieces are coalesced into one buffer so a response usually leaves in
// a single sendmsg; large bodies are queued without a copy and gathered;
// file ranges go out with sendfile. Buffers are recycled per connection.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace m0::http::detail {

class output_queue {
public:
    enum class result { done, would_block, failed };

    output_queue() = default;
    output_queue(const output_queue&) = delete;
    output_queue& operator=(const output_queue&) = delete;
    ~output_queue() { clear(); }

    // The buffer at the end of the queue; append to it, then call added()
    // with the number of bytes appended.
    std::string& tail();
    void added(std::size_t n) noexcept { pending_ += n; }

    void append(std::string_view bytes);
    // Takes the string: copied into the tail if small, else queued as is.
    void push(std::string&& bytes);
    // Queues a payload shared with other connections, without a copy; the
    // reference is dropped once it is written.
    void push_shared(std::shared_ptr<const std::string> bytes);
    // Takes ownership of fd (closed once sent or dropped).
    void push_file(int fd, std::uint64_t offset, std::uint64_t length);

    std::uint64_t pending() const noexcept { return pending_; }
    bool empty() const noexcept { return pending_ == 0; }

    // Writes to the non-blocking socket `sock` until done or it would
    // block. On failed, `error` holds the errno.
    result flush(int sock, int& error);

    // What bytes go through instead of the socket's own calls (TLS).
    class sink {
    public:
        // Takes a prefix of [data, data + len) and says how much, or takes
        // nothing and says would_block; then the next call passes the same
        // bytes again (more may follow them).
        virtual result write(const char* data, std::size_t len, std::size_t& written, int& error) = 0;

    protected:
        ~sink() = default;
    };
    // The same through `to`: small pieces are gathered into one call (a TLS
    // record each, up to 16 KiB), file ranges are read and passed on.
    result flush(sink& to, int& error);
    // Drops everything queued (closing files).
    void clear() noexcept;

private:
    struct segment {
        std::string bytes;
        std::shared_ptr<const std::string> shared;  // used instead of bytes when set
        std::size_t offset = 0;  // bytes already written
        int fd = -1;             // file segment when >= 0
        std::uint64_t file_offset = 0;
        std::uint64_t file_left = 0;
        bool appendable = false;

        const char* data() const noexcept { return shared ? shared->data() : bytes.data(); }
        std::size_t size() const noexcept { return shared ? shared->size() : bytes.size(); }
    };
    result flush_file(int sock, segment& s, int& error);
    result flush_bytes(int sock, int& error);
    result flush_file_through(sink& to, segment& s, int& error);
    result flush_bytes_through(sink& to, int& error);
    // n more bytes of the byte segments from first_ on were written.
    void consume(std::size_t n) noexcept;
    void recycle() noexcept;

    std::vector<segment> segments_;
    std::size_t first_ = 0;  // segments before it are fully written
    std::uint64_t pending_ = 0;
    std::string spare_;      // a coalescing buffer kept for the next response
    std::unique_ptr<char[]> gather_;  // flush(sink&): pieces gathered, file bytes read
};

}  // namespace m0::http::detail
