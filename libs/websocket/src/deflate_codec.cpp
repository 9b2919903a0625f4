#include <m0/websocket/deflate_codec.hpp>

#include <array>
#include <map>
#include <stdexcept>
#include <utility>

#include <zlib.h>

namespace m0::websocket {
namespace {

constexpr std::size_t chunk = 16 * 1024;
constexpr char flush_tail[4] = {0x00, 0x00, static_cast<char>(0xFF), static_cast<char>(0xFF)};

// Memory level of the deflaters: 8 is zlib's default (128 KiB of hash and
// buffer state on top of the window).
constexpr int mem_level = 8;

}  // namespace

struct inflater::state {
    z_stream z{};
};

inflater::inflater(int window_bits) : z_(std::make_unique<state>()) {
    // Raw deflate (negative bits). zlib's deflate never writes a window of
    // 256 bytes (it turns 8 into 9), so a peer that negotiated 8 may still
    // use 512: inflate with 9 at least.
    if (inflateInit2(&z_->z, -std::max(window_bits, 9)) != Z_OK) throw std::bad_alloc();
}

inflater::~inflater() { inflateEnd(&z_->z); }

inflater::result inflater::feed(std::string_view in, std::string& out, std::uint64_t max_size) {
    z_stream& z = z_->z;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    while (true) {
        const std::size_t old = out.size();
        const std::size_t room = std::min<std::uint64_t>(chunk, max_size + 1 - std::min<std::uint64_t>(old, max_size + 1));
        if (room == 0) return result::too_big;
        out.resize(old + room);
        z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
        z.avail_out = static_cast<uInt>(room);
        int rc = ::inflate(&z, Z_SYNC_FLUSH);
        out.resize(old + room - z.avail_out);
        if (out.size() > max_size) return result::too_big;
        if (rc == Z_BUF_ERROR) return result::ok;  // no progress possible: input used up
        // A final block (BFINAL) ends the stream; permessage-deflate
        // senders never set it, but if one does the rest must be empty.
        if (rc == Z_STREAM_END) return z.avail_in == 0 ? result::ok : result::bad_data;
        if (rc != Z_OK) return result::bad_data;
        if (z.avail_in == 0 && z.avail_out != 0) return result::ok;
    }
}

inflater::result inflater::finish(std::string& out, std::uint64_t max_size, bool reset) {
    auto r = feed(std::string_view(flush_tail, 4), out, max_size);
    if (reset || r != result::ok) inflateReset(&z_->z);
    return r;
}

struct deflater::state {
    z_stream z{};
};

deflater::deflater(int window_bits, int level) : z_(std::make_unique<state>()) {
    if (deflateInit2(&z_->z, level, Z_DEFLATED, -window_bits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::bad_alloc();
}

deflater::~deflater() { deflateEnd(&z_->z); }

void deflater::compress(std::string_view in, std::string& out, bool reset) {
    z_stream& z = z_->z;
    const std::size_t start = out.size();
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    do {
        const std::size_t old = out.size();
        const std::size_t room = deflateBound(&z, z.avail_in) + 16;
        out.resize(old + room);
        z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
        z.avail_out = static_cast<uInt>(room);
        ::deflate(&z, Z_SYNC_FLUSH);
        out.resize(old + room - z.avail_out);
    } while (z.avail_out == 0 || z.avail_in != 0);
    // A sync flush ends with an empty stored block, 00 00 FF FF: the
    // receiver adds it back.
    if (out.size() - start >= 4 && std::string_view(out).substr(out.size() - 4) == std::string_view(flush_tail, 4))
        out.resize(out.size() - 4);
    if (reset) deflateReset(&z);
}

deflater& deflater::shared(int window_bits, int level) {
    thread_local std::map<std::pair<int, int>, std::unique_ptr<deflater>> by_params;
    auto& d = by_params[{window_bits, level}];
    if (!d) d = std::make_unique<deflater>(window_bits, level);
    return *d;
}

}  // namespace m0::websocket
