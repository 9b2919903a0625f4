#include <m0/static_files/status_response.hpp>

#include <string>

namespace m0::static_files {

void respond_status(http::exchange& ex, unsigned status, std::vector<http::response_header> extra) {
    std::string body(http::reason_phrase(status));
    body.push_back('\n');
    extra.push_back({"Content-Type", "text/plain"});
    ex.respond(status, std::move(extra), std::move(body));
}

}  // namespace m0::static_files
