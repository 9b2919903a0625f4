#pragma once
// The short text/plain answers (404, 405, 301...) the frontend gives itself.
#include <vector>

#include <m0/http.hpp>

namespace m0::static_files {

// Answers `status` with its reason phrase as a text/plain body, plus `extra`
// headers (Allow, Location...).
void respond_status(http::exchange& ex, unsigned status, std::vector<http::response_header> extra = {});

}  // namespace m0::static_files
