#pragma once
// The live /status page of the metrics listener: one self-contained HTML
// document (vanilla JS and CSS, nothing fetched from elsewhere), compiled
// into libm0core from status_page.html. It draws what /status/stream sends.
#include <string_view>

namespace m0::telemetry {

std::string_view status_page_html() noexcept;

}  // namespace m0::telemetry
