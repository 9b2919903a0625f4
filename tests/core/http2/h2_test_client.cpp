#include "h2_test_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include <nghttp2/nghttp2.h>

namespace m0::test {

namespace {

h2_test_client& client_of(void* user) { return *static_cast<h2_test_client*>(user); }

int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
              const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
    auto& st = client_of(user).streams_[frame->hd.stream_id];
    std::string n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") {
        const int status = std::stoi(v);
        if (status >= 200) st.status = status;  // a 100 Continue is interim
        return 0;
    }
    if (st.status != 0 && frame->headers.cat == NGHTTP2_HCAT_HEADERS)
        st.trailers.emplace_back(std::move(n), std::move(v));
    else
        st.headers.emplace_back(std::move(n), std::move(v));
    return 0;
}

int on_data(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data, std::size_t len,
            void* user) {
    client_of(user).streams_[stream_id].body.append(reinterpret_cast<const char*>(data), len);
    return 0;
}

int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code, void* user) {
    auto& st = client_of(user).streams_[stream_id];
    st.closed = true;
    st.close_code = error_code;
    return 0;
}

int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        auto& c = client_of(user);
        c.goaway_ = true;
        c.goaway_code_ = frame->goaway.error_code;
        c.goaway_last_stream_ = frame->goaway.last_stream_id;
    }
    return 0;
}

ssize_t read_upload(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf, std::size_t length,
                    std::uint32_t* flags, nghttp2_data_source*, void* user) {
    auto& st = client_of(user).streams_[stream_id];
    const std::size_t n = std::min(length, st.upload.size() - st.uploaded);
    std::memcpy(buf, st.upload.data() + st.uploaded, n);
    st.uploaded += n;
    if (st.uploaded == st.upload.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
}

}  // namespace

h2_test_client::h2_test_client(std::uint16_t port, std::uint32_t window) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error("h2_test_client: connect failed");
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_client_new(&session_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
    send_pending();
}

h2_test_client::~h2_test_client() {
    nghttp2_session_del(session_);
    if (fd_ >= 0) ::close(fd_);
}

std::int32_t h2_test_client::request(const std::string& method, const std::string& path,
                                     const std::vector<std::pair<std::string, std::string>>& headers,
                                     std::string body, bool has_body) {
    std::vector<std::pair<std::string, std::string>> all = {
        {":method", method}, {":scheme", "http"}, {":path", path}, {":authority", "127.0.0.1"}};
    all.insert(all.end(), headers.begin(), headers.end());
    std::vector<nghttp2_nv> nv;
    for (auto& [n, v] : all)
        nv.push_back({reinterpret_cast<std::uint8_t*>(n.data()), reinterpret_cast<std::uint8_t*>(v.data()),
                      n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    nghttp2_data_provider provider{};
    provider.read_callback = read_upload;
    const bool with_body = has_body || !body.empty();
    // The id the next request gets, so the upload is in place before
    // nghttp2 asks for it.
    const std::int32_t id = nghttp2_session_get_next_stream_id(session_);
    if (with_body) streams_[id].upload = std::move(body);
    const std::int32_t got =
        nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), with_body ? &provider : nullptr, nullptr);
    if (got != id) throw std::runtime_error("h2_test_client: unexpected stream id");
    send_pending();
    return id;
}

void h2_test_client::reset(std::int32_t stream_id, std::uint32_t error_code) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, error_code);
    send_pending();
}

std::int32_t h2_test_client::upload_window(std::int32_t id) const {
    return nghttp2_session_get_stream_remote_window_size(session_, id);
}

std::uint32_t h2_test_client::server_setting(int id) const {
    return nghttp2_session_get_remote_settings(session_, static_cast<nghttp2_settings_id>(id));
}

void h2_test_client::send_pending() {
    for (;;) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n <= 0) return;
        std::size_t done = 0;
        while (done < static_cast<std::size_t>(n)) {
            const ssize_t w = ::send(fd_, data + done, static_cast<std::size_t>(n) - done, MSG_NOSIGNAL);
            if (w <= 0) {
                ended_ = true;
                return;
            }
            done += static_cast<std::size_t>(w);
        }
    }
}

bool h2_test_client::pump(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    send_pending();
    while (!pred()) {
        if (ended_) return false;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 50))) <= 0) continue;
        char buf[16384];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) {
            ended_ = true;
            return pred();
        }
        if (nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(buf), static_cast<std::size_t>(n)) < 0) {
            ended_ = true;
            return pred();
        }
        send_pending();
    }
    return true;
}

}  // namespace m0::test
