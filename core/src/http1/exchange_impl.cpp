#include "http1/exchange_impl.hpp"

#include <boost/asio/post.hpp>

#include "http1/session.hpp"

namespace m0::http::detail {

exchange_impl::~exchange_impl() { session_->released(*this, std::move(data_)); }

boost::asio::io_context& exchange_impl::io() { return session_->io(); }

void exchange_impl::respond(unsigned status, std::vector<response_header> headers, std::string body) {
    session_->respond(*this, status, headers, std::move(body));
}

void exchange_impl::respond_borrowed(unsigned status, const std::vector<response_header>& headers,
                                     std::string_view body) {
    session_->respond_borrowed(*this, status, headers, body);
}

void exchange_impl::begin(unsigned status, std::vector<response_header> headers,
                          std::optional<std::uint64_t> content_length) {
    session_->begin(*this, status, headers, content_length);
}

void exchange_impl::write(std::string data) { session_->write(*this, std::move(data)); }
void exchange_impl::write_shared(std::shared_ptr<const std::string> data) {
    session_->write_shared(*this, std::move(data));
}

void exchange_impl::write_shared_batch(std::span<const std::shared_ptr<const std::string>> pieces) {
    session_->write_shared_batch(*this, pieces);
}

void exchange_impl::write_file(int fd, std::uint64_t offset, std::uint64_t length) {
    session_->write_file(*this, fd, offset, length);
}

void exchange_impl::end() { session_->end(*this); }

void exchange_impl::end_with_trailers(std::vector<response_header> trailers) { session_->end(*this, &trailers); }

void exchange_impl::abort() { session_->abort(*this); }

void exchange_impl::set_outcome(request_outcome o) { session_->set_outcome(*this, o); }

std::size_t exchange_impl::pending_bytes() const { return session_->pending_bytes(); }

void exchange_impl::when_drained(std::size_t below, std::function<void()> fn) {
    session_->when_drained(below, std::move(fn));
}

bool exchange_impl::client_gone() const { return session_->client_gone(); }

void exchange_impl::read_body(std::size_t max_bytes, body_handler fn) {
    if (streamed_) {
        session_->read_body(*this, max_bytes, std::move(fn));
        return;
    }
    post_whole_body(session_->io(), data_->req.body, whole_taken_, std::move(fn));
}

bool exchange_impl::body_pending() const { return streamed_ && session_->body_pending(*this); }

void exchange_impl::on_client_gone(std::function<void()> fn) { session_->on_client_gone(*this, std::move(fn)); }

void exchange_impl::on_peer_eof(std::function<void()> fn) { session_->on_peer_eof(*this, std::move(fn)); }

void exchange_impl::on_drain(std::function<void()> fn) { session_->on_drain(*this, std::move(fn)); }

std::shared_ptr<byte_stream> exchange_impl::upgrade(std::vector<response_header> headers) {
    return session_->upgrade(*this, headers);
}

}  // namespace m0::http::detail
