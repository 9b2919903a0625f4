#pragma once
// One reactor's end of the access log and the metrics: the engine calls it
// when a response finishes (every frontend goes through the engine, so every
// kind of response is seen once). Reactor-thread only. Lines are formatted
// into a per-reactor buffer handed to the access log's writer thread when it
// fills or, at the latest, flush_interval after its first line.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <m0/api.hpp>
#include <m0/http.hpp>

#include "telemetry/access_log_format.hpp"
#include "telemetry/access_log_sink.hpp"
#include "telemetry/metrics_table.hpp"

namespace m0 {

class M0_INTERNAL_API request_recorder {
public:
    static constexpr std::size_t flush_size = 64 * 1024;
    static constexpr std::chrono::milliseconds flush_interval{200};

    // `format`/`sink`: the access log, or null when it is off. `slot`: this
    // reactor's metrics, or null when metrics are off. All outlive the recorder.
    request_recorder(unsigned reactor, boost::asio::io_context& io, const telemetry::access_log_format* format,
                     telemetry::access_log_sink* sink, const telemetry::metrics_table* table,
                     telemetry::reactor_slot* slot);
    ~request_recorder();  // hands what is buffered to the sink
    request_recorder(const request_recorder&) = delete;
    request_recorder& operator=(const request_recorder&) = delete;

    // True when the log format reads response headers: the engine then
    // copies them at the response head with capture().
    bool wants_response_headers() const noexcept { return format_ && !format_->response_headers().empty(); }
    void capture(const std::vector<http::response_header>& headers, std::vector<std::string>& into) const;

    void record(const telemetry::response_record& r);
    void bytes_in(std::uint64_t n) noexcept {
        if (slot_) slot_->bytes_in.fetch_add(n, std::memory_order_relaxed);
    }
    void bytes_out(std::uint64_t n) noexcept {
        if (slot_) slot_->bytes_out.fetch_add(n, std::memory_order_relaxed);
    }
    void proxy_header_refused() noexcept {
        if (slot_) slot_->proxy_headers_refused.fetch_add(1, std::memory_order_relaxed);
    }
    void tls_handshake(bool resumed) noexcept {
        if (!slot_) return;
        slot_->tls_handshakes.fetch_add(1, std::memory_order_relaxed);
        if (resumed) slot_->tls_resumed.fetch_add(1, std::memory_order_relaxed);
    }
    // `reason`: a tls::handshake_failure value.
    void tls_handshake_failed(std::size_t reason) noexcept {
        if (slot_ && reason < telemetry::tls_failure_reasons)
            slot_->tls_failures[reason].fetch_add(1, std::memory_order_relaxed);
    }
    void http2_connection() noexcept {
        if (slot_) slot_->http2_connections.fetch_add(1, std::memory_order_relaxed);
    }
    void http2_stream() noexcept {
        if (slot_) slot_->http2_streams.fetch_add(1, std::memory_order_relaxed);
    }
    void http2_enhance_your_calm() noexcept {
        if (slot_) slot_->http2_calm.fetch_add(1, std::memory_order_relaxed);
    }
    void forwarded_headers_ignored() noexcept {
        if (slot_) slot_->forwarded_headers_ignored.fetch_add(1, std::memory_order_relaxed);
    }
    // The reactor's loop ended: the buffer goes to the sink and the timer is
    // dropped while its io_context still exists. Later records are kept
    // until destruction.
    void stop();

private:
    void flush();
    void arm_timer();

    const unsigned reactor_;
    const int pid_;
    const telemetry::access_log_format* format_;
    telemetry::access_log_sink* sink_;
    const telemetry::metrics_table* table_;
    telemetry::reactor_slot* slot_;
    std::unique_ptr<boost::asio::steady_timer> timer_;
    bool timer_armed_ = false;
    std::string buffer_;
};

}  // namespace m0
