#include "http/rejection.hpp"

#include <string>

#include <m0/http.hpp>
#include <m0/log.hpp>

#include "telemetry/request_recorder.hpp"

namespace m0::http::detail {

void log_rejection(std::string_view where, unsigned status, std::string_view reason) {
    if (!log::enabled(log::level::info)) return;
    std::string line(where);
    line += ": rejected request: ";
    line += std::to_string(status);
    line += ' ';
    line += reason_phrase(status);
    line += " (";
    line += reason;
    line += ')';
    log::info(line);
}

void record_rejection(request_recorder* recorder, const boost::asio::ip::tcp::endpoint& remote, unsigned status,
                      std::uint64_t body_bytes) {
    if (!recorder) return;
    telemetry::response_record r;
    r.remote = remote;
    r.status = status;
    r.body_bytes = body_bytes;
    recorder->record(r);
}

}  // namespace m0::http::detail
