#pragma once
// zlib streams for permessage-deflate: an inflater per connection (its
// window lives only as long as the context it must keep) and deflaters,
// either one per connection (context takeover) or one shared by every
// connection of a thread (no context takeover).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace m0::websocket {

class inflater {
public:
    enum class result { ok, too_big, bad_data };

    explicit inflater(int window_bits);
    ~inflater();
    inflater(const inflater&) = delete;
    inflater& operator=(const inflater&) = delete;

    // Inflates `in` (a piece of one message's compressed payload) onto the
    // end of `out`; too_big as soon as `out` would pass `max_size`.
    result feed(std::string_view in, std::string& out, std::uint64_t max_size);
    // The message ended: flushes the 00 00 FF FF tail the sender removed.
    // With `reset` the stream forgets its window (no context takeover).
    result finish(std::string& out, std::uint64_t max_size, bool reset);

private:
    struct state;
    std::unique_ptr<state> z_;
};

class deflater {
public:
    deflater(int window_bits, int level);
    ~deflater();
    deflater(const deflater&) = delete;
    deflater& operator=(const deflater&) = delete;

    // Appends the compressed form of one whole message to `out`, without
    // the 00 00 FF FF tail (RFC 7692 7.2.1). With `reset` the next message
    // starts from an empty window.
    void compress(std::string_view in, std::string& out, bool reset);

    // The calling thread's deflater for `window_bits` (9..15) and `level`,
    // reset after every message: what no-context-takeover connections share.
    static deflater& shared(int window_bits, int level);

private:
    struct state;
    std::unique_ptr<state> z_;
};

}  // namespace m0::websocket
