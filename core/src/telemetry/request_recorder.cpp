#include "telemetry/request_recorder.hpp"

#include <unistd.h>

#include <algorithm>

namespace m0 {

request_recorder::request_recorder(unsigned reactor, boost::asio::io_context& io,
                                   const telemetry::access_log_format* format, telemetry::access_log_sink* sink,
                                   const telemetry::metrics_table* table, telemetry::reactor_slot* slot)
    : reactor_(reactor), pid_(static_cast<int>(::getpid())), format_(sink ? format : nullptr), sink_(sink),
      table_(table), slot_(slot) {
    if (format_) {
        timer_ = std::make_unique<boost::asio::steady_timer>(io);
        buffer_.reserve(flush_size + 4096);
    }
}

request_recorder::~request_recorder() { flush(); }

void request_recorder::capture(const std::vector<http::response_header>& headers,
                               std::vector<std::string>& into) const {
    const auto& wanted = format_->response_headers();
    into.assign(wanted.size(), std::string());
    for (std::size_t i = 0; i < wanted.size(); ++i)
        for (const auto& h : headers)
            if (http::ascii_iequals(h.name, wanted[i])) {
                into[i] = h.value;
                break;
            }
}

void request_recorder::record(const telemetry::response_record& r) {
    if (slot_) {
        auto& c = table_->mount(*slot_, table_->mount_index(r.mount));
        const std::size_t cls = r.status >= 100 && r.status < 600 ? r.status / 100 : 0;
        c.by_class[cls].fetch_add(1, std::memory_order_relaxed);
        const auto us = static_cast<std::uint64_t>(r.duration.count());
        const auto& bounds = telemetry::latency_bounds_us;
        const auto bucket = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), us) - bounds.begin());
        c.latency[bucket].fetch_add(1, std::memory_order_relaxed);
        c.latency_sum_us.fetch_add(us, std::memory_order_relaxed);
        if (r.outcome == http::request_outcome::timeout) c.deadlines.fetch_add(1, std::memory_order_relaxed);
    }
    if (!format_) return;
    format_->render(r, pid_, reactor_, buffer_);
    if (buffer_.size() >= flush_size)
        flush();
    else if (!timer_armed_ && timer_)
        arm_timer();
}

void request_recorder::arm_timer() {
    timer_armed_ = true;
    timer_->expires_after(flush_interval);
    timer_->async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;  // cancelled by stop(): this recorder may be going away
        timer_armed_ = false;
        flush();
    });
}

void request_recorder::flush() {
    if (!sink_ || buffer_.empty()) return;
    std::string full;
    full.reserve(flush_size + 4096);
    full.swap(buffer_);
    sink_->submit(std::move(full));
}

void request_recorder::stop() {
    flush();
    timer_.reset();  // cancels a pending wait
    timer_armed_ = true;  // no timer any more: later records wait for the destructor
}

}  // namespace m0
