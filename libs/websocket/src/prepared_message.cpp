#include <m0/websocket/prepared_message.hpp>

#include <m0/websocket/deflate_codec.hpp>

namespace m0::websocket {

prepared_message::prepared_message(opcode kind, std::string_view payload, bool compress, int level)
    : plain_(std::make_shared<const std::string>(encode_frame(kind, payload))) {
    if (!compress) return;
    std::string deflated;
    deflater::shared(15, level).compress(payload, deflated, true);
    compressed_ = std::make_shared<const std::string>(encode_frame(kind, deflated, true, true));
}

}  // namespace m0::websocket
