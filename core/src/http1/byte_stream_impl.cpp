#include "http1/byte_stream_impl.hpp"

#include "http1/session.hpp"

namespace m0::http::detail {

boost::asio::io_context& byte_stream_impl::io() { return session_->io(); }

void byte_stream_impl::async_read(read_handler fn) { session_->stream_read(std::move(fn)); }

void byte_stream_impl::write(std::string data) { session_->stream_write(std::move(data)); }

void byte_stream_impl::write_shared(std::shared_ptr<const std::string> data) {
    session_->stream_write_shared(std::move(data));
}

std::size_t byte_stream_impl::pending_bytes() const { return session_->pending_bytes(); }

void byte_stream_impl::when_drained(std::size_t below, std::function<void()> fn) {
    session_->when_drained(below, std::move(fn));
}

void byte_stream_impl::on_drain(std::function<void()> fn) { session_->stream_on_drain(std::move(fn)); }

void byte_stream_impl::close() { session_->stream_close(); }

bool byte_stream_impl::closed() const { return session_->stream_closed(); }

}  // namespace m0::http::detail
