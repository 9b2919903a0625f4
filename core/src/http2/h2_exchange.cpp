#include "http2/h2_exchange.hpp"

#include <unistd.h>

#include "http/request_data.hpp"

namespace m0::http2 {

h2_exchange::~h2_exchange() { session_->released(*stream_); }

void h2_exchange::respond(unsigned status, std::vector<http::response_header> headers, std::string body) {
    session_->respond(*stream_, status, headers, std::move(body));
}

void h2_exchange::respond_borrowed(unsigned status, const std::vector<http::response_header>& headers,
                                   std::string_view body) {
    session_->respond(*stream_, status, headers, std::string(body));
}

void h2_exchange::begin(unsigned status, std::vector<http::response_header> headers,
                        std::optional<std::uint64_t> content_length) {
    session_->begin(*stream_, status, headers, content_length);
}

void h2_exchange::write(std::string data) {
    if (data.empty()) return;
    session_->write(*stream_, data.size(), [&] { stream_->out.push(std::move(data)); });
}

void h2_exchange::write_shared(std::shared_ptr<const std::string> data) {
    if (!data || data->empty()) return;
    session_->write(*stream_, data->size(), [&] { stream_->out.push_shared(std::move(data)); });
}

void h2_exchange::write_shared_batch(std::span<const std::shared_ptr<const std::string>> pieces) {
    std::uint64_t size = 0;
    for (const auto& p : pieces)
        if (p) size += p->size();
    if (size == 0) return;
    session_->write(*stream_, size, [&] {
        for (const auto& p : pieces) stream_->out.push_shared(p);
    });
}

void h2_exchange::write_file(int fd, std::uint64_t offset, std::uint64_t length) {
    session_->write_file(*stream_, fd, offset, length);
}

void h2_exchange::end() { session_->end(*stream_, nullptr); }

void h2_exchange::end_with_trailers(std::vector<http::response_header> trailers) {
    session_->end(*stream_, &trailers);
}

void h2_exchange::abort() { session_->abort(*stream_); }

void h2_exchange::when_drained(std::size_t below, std::function<void()> fn) {
    session_->when_drained(*stream_, below, std::move(fn));
}

// An extended CONNECT has no body: what follows it on the stream is the
// WebSocket's, read through the byte stream after upgrade().
void h2_exchange::read_body(std::size_t max_bytes, http::body_handler fn) {
    if (stream_->streamed && !stream_->websocket) {
        session_->read_body(*stream_, max_bytes, std::move(fn));
        return;
    }
    http::detail::post_whole_body(session_->io(), stream_->data->req.body, whole_taken_, std::move(fn));
}

bool h2_exchange::body_pending() const {
    return stream_->streamed && !stream_->websocket && !stream_->finished && !(stream_->body_done && stream_->inbound.empty());
}

void h2_exchange::on_client_gone(std::function<void()> fn) { session_->on_client_gone(*stream_, std::move(fn)); }

void h2_exchange::on_drain(std::function<void()> fn) { session_->on_drain(*stream_, std::move(fn)); }

void h2_byte_stream::write(std::string data) {
    if (data.empty()) return;
    session_->stream_write(*stream_, [&] { stream_->out.push(std::move(data)); });
}

void h2_byte_stream::write_shared(std::shared_ptr<const std::string> data) {
    if (!data || data->empty()) return;
    session_->stream_write(*stream_, [&] { stream_->out.push_shared(std::move(data)); });
}

}  // namespace m0::http2
