#pragma once
// An HTTP/2 client for the engine's unit tests: nghttp2's client session
// over a blocking TCP socket to 127.0.0.1, prior-knowledge h2c. Requests
// are submitted, then pump() exchanges frames until a condition holds.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

struct nghttp2_session;

namespace m0::test {

class h2_test_client {
public:
    struct stream_state {
        int status = 0;
        std::vector<std::pair<std::string, std::string>> headers;
        std::vector<std::pair<std::string, std::string>> trailers;
        std::string body;
        std::string upload;        // the request body still to send
        std::size_t uploaded = 0;  // bytes of it sent
        bool closed = false;
        std::uint32_t close_code = 0;  // RST_STREAM error code (0: ended normally)
    };

    // window: the initial stream window this client announces (0: the
    // server may send no body until the test opens it).
    explicit h2_test_client(std::uint16_t port, std::uint32_t window = 65535);
    ~h2_test_client();
    h2_test_client(const h2_test_client&) = delete;
    h2_test_client& operator=(const h2_test_client&) = delete;

    // Submits a request; returns its stream id.
    std::int32_t request(const std::string& method, const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& headers = {},
                         std::string body = {}, bool has_body = false);
    void reset(std::int32_t stream_id, std::uint32_t error_code = 8 /* CANCEL */);
    // Exchanges frames until pred() holds (true) or `limit` passes, or the
    // connection ends (false).
    bool pump(const std::function<bool()>& pred, std::chrono::milliseconds limit = std::chrono::seconds(5));
    bool pump_until_closed(std::int32_t stream_id) {
        return pump([&] { return streams_[stream_id].closed; });
    }

    stream_state& stream(std::int32_t id) { return streams_[id]; }
    // The window the server left this stream for its request body.
    std::int32_t upload_window(std::int32_t id) const;
    // A SETTINGS value the server announced (its default until its SETTINGS came).
    std::uint32_t server_setting(int id) const;
    bool goaway() const { return goaway_; }
    std::uint32_t goaway_code() const { return goaway_code_; }
    std::int32_t goaway_last_stream() const { return goaway_last_stream_; }
    bool connection_ended() const { return ended_; }

    // nghttp2 callbacks.
    std::map<std::int32_t, stream_state> streams_;
    bool goaway_ = false;
    std::uint32_t goaway_code_ = 0;
    std::int32_t goaway_last_stream_ = -1;

private:
    void send_pending();
    int fd_ = -1;
    nghttp2_session* session_ = nullptr;
    bool ended_ = false;
};

}  // namespace m0::test
